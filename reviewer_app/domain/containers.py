"""What a container command takes from the host: the directories it sends or mounts, and what it leaves to files
the command's text does not show.

Why: ``docker build .`` sends the whole build context to the daemon (every file under it, a ``.env`` included:
``.dockerignore`` is not read here, so the whole context counts), ``docker run -v ~/.ssh:/x`` mounts a key
directory, and ``docker compose up`` starts whatever a compose file says, host mounts (``volumes: [~/.ssh:/x]``)
and build contexts included. The first two are judged by what the directories hold (:mod:`.file_reach`); the last
cannot be established from the command, so it is high risk: a wildcard allow never settles it.

Covers ``docker``, ``podman``, ``nerdctl`` and ``finch`` (``build``, ``buildx build``, ``image build``, ``builder
build``, ``run``, ``create``, ``cp``, ``compose``, ``stack deploy``, ``buildx bake``, ``kube play``), ``buildah
bud|build`` and the ``docker-compose``/``podman-compose`` programs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reviewer_app.domain.recursive_reads import RecursiveRead, remote_path, split_options

ENGINES = frozenset({"docker", "podman", "nerdctl", "finch"})
COMPOSE_PROGRAMS = frozenset({"docker-compose", "podman-compose"})


@dataclass(frozen=True, slots=True)
class ContainerReach:
    """What one container command takes from the host."""

    read: RecursiveRead | None = None
    """The host directories (or files) it sends to the daemon or mounts into a container, read whole."""
    unknowable: str | None = None
    """Why its effect on the host cannot be established from its text (then it is high risk), else None."""
    writes_into: tuple[str, ...] = ()
    """Host directories it writes an image's files into (``--output type=local,dest=DIR``): which files, only the
    image says."""


# The engines' global options that take a value (``docker --context x build``); a word that follows an unknown
# option and does not look like a subcommand is skipped as its value.
_GLOBAL_VALUES = frozenset(
    {"-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey",
     "--connection", "--url", "--identity", "--root", "--runroot", "--storage-driver", "--storage-opt", "--runtime",
     "--cgroup-manager", "--tmpdir", "--module", "--out", "-n", "--namespace", "-a", "--address", "--snapshotter",
     "--data-root", "--cni-path", "--cni-netconfpath", "--hosts-dir"}
)  # fmt: skip
_COMPOSE_VALUES = frozenset(
    {"-f", "--file", "-p", "--project-name", "--project-directory", "--profile", "--env-file", "--ansi",
     "--progress", "--parallel", "-H", "--host", "-c", "--context", "--tlscacert", "--tlscert", "--tlskey",
     "--podman-path", "--podman-args", "--podman-run-args", "--in-pod", "--pod-args"}
)  # fmt: skip
_BUILD_VALUES = ("tfomc", ("--tag", "--file", "--output", "--build-arg", "--label", "--target", "--platform",
                          "--cache-from", "--cache-to", "--network", "--progress", "--secret", "--ssh",
                          "--build-context", "--iidfile", "--metadata-file", "--add-host", "--cgroup-parent",
                          "--memory", "--memory-swap", "--shm-size", "--ulimit", "--isolation", "--cpu-shares",
                          "--cpu-period", "--cpu-quota", "--cpuset-cpus", "--cpuset-mems", "--security-opt",
                          "--allow", "--attest", "--sbom", "--provenance", "--annotation", "--builder", "--call",
                          "--format", "--layers", "--jobs", "--authfile", "--cert-dir", "--creds", "--arch",
                          "--os", "--variant", "--volume", "-v", "--from", "--manifest", "--build-arg-file",
                          "--env", "--ignorefile", "--runtime", "--userns", "--timestamp", "--retry"))  # fmt: skip
# Compose subcommands that only look at, stop or remove what is already running: the compose file's mounts and
# build contexts were judged (asked) when the containers were made.
_COMPOSE_LOOKS = frozenset(
    {"ps", "ls", "logs", "top", "images", "version", "port", "events", "stop", "down", "kill", "pause", "unpause",
     "rm", "exec", "help", "stats", "wait"}
)  # fmt: skip
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")
_DAEMON_SOCKET = re.compile(r"(docker|podman|containerd|buildkitd|nerdctl)\.sock$|/run/(docker|podman)/?$")


def container_reach(program: str, args: tuple[str, ...]) -> ContainerReach | None:
    """What ``program args`` takes from the host, or None when it is no container command that does."""
    if program in COMPOSE_PROGRAMS:
        return _compose(program, args)
    if program in ("buildah",):
        sub, rest = _subcommand(args, _GLOBAL_VALUES)
        return _build(rest) if sub in ("bud", "build", "build-using-dockerfile") else None
    if program not in ENGINES:
        return None
    sub, rest = _subcommand(args, _GLOBAL_VALUES)
    if sub in ("container", "image", "builder"):
        sub, rest = _subcommand(rest, frozenset())  # ``docker image build``, ``docker container run``
    if sub == "buildx":
        sub, rest = _subcommand(rest, frozenset({"--builder"}))
        sub = {"b": "build", "f": "bake"}.get(sub, sub)
    if sub == "build":
        return _build(rest)
    if sub == "compose":
        return _compose(f"{program} compose", rest)
    if sub == "bake" or (sub == "stack" and _subcommand(rest, frozenset())[0] in ("deploy", "up")):
        return ContainerReach(unknowable=f"{program} {sub} starts what a file says (mounts, contexts, secrets)")
    if sub in ("play", "kube") and _subcommand(rest, frozenset())[0] in ("kube", "play"):
        return ContainerReach(unknowable=f"{program} {sub} starts what a file says (host paths among its volumes)")
    if sub in ("run", "create"):
        return _run(program, sub, rest)
    if sub == "cp":
        operands, seen, _ = split_options(rest, ("", ()))
        if not operands or remote_path(operands[0]):
            return None  # copies out of a container
        return ContainerReach(RecursiveRead((operands[0],), follows_links="L" in seen))
    return None


def _subcommand(args: tuple[str, ...], values: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """The first word that names a subcommand, past options (and the values of those in ``values``), and the words
    after it; ``""`` when there is none."""
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word.startswith("-"):
            if word in values:
                index += 1
            continue
        if _SUBCOMMAND.fullmatch(word):
            return word, args[index:]
    return "", ()


def _compose(program: str, args: tuple[str, ...]) -> ContainerReach | None:
    """A compose command that makes or starts containers, builds, or prints the resolved file (``config`` shows
    the ``.env`` values) does what the compose file says: it cannot be established here."""
    sub, _ = _subcommand(args, _COMPOSE_VALUES)
    if not sub or sub in _COMPOSE_LOOKS:
        return None
    return ContainerReach(
        unknowable=f"{program} {sub} does what the compose file says (host mounts, build contexts, env files), "
        "which Reviewer does not read"
    )


def _build(args: tuple[str, ...]) -> ContainerReach:
    """``build [OPTIONS] CONTEXT``: the context and every ``--build-context`` directory are sent whole; ``--ssh``
    hands the build the SSH agent or keys; ``--output`` writes the image's files into a directory."""
    operands, seen, given = split_options(args, _BUILD_VALUES)
    sent = [word for word in operands if word != "-" and not _remote_context(word)]
    for value in given.get("--build-context", []):
        source = value.partition("=")[2]
        if source and not _remote_context(source):
            sent.append(source)
    for value in given.get("--secret", []):
        fields = dict(field.partition("=")[::2] for field in value.split(","))
        source = fields.get("src", fields.get("source", ""))
        if source:
            sent.append(source)
    unknowable = "the build is given the SSH agent or keys (--ssh)" if "--ssh" in seen else None
    written = [_local_destination(value) for value in [*given.get("o", []), *given.get("--output", [])]]
    return ContainerReach(
        RecursiveRead(tuple(sent), follows_links=False) if sent else None,
        unknowable,
        tuple(place for place in written if place),
    )


def _remote_context(word: str) -> bool:
    """A context the daemon fetches itself (a git or HTTP URL, an image), not a local directory."""
    return "://" in word or word.startswith(("git@", "github.com/", "target:")) or word.endswith(".git")


def _local_destination(value: str) -> str:
    """The host directory an ``--output`` writes files into (``type=local,dest=DIR`` or a bare ``DIR``), else
    ``""`` (an image, a registry, a tar stream)."""
    if "=" not in value:
        return "" if value == "-" else value
    fields = dict(field.partition("=")[::2] for field in value.split(","))
    if fields.get("type", "local") != "local":
        return ""
    return fields.get("dest", fields.get("destination", ""))


_ESCAPE_OPTIONS = frozenset({"--cap-add", "--device", "--security-opt", "--pid", "--userns", "--cgroupns"})
_HOST_CAPABILITIES = re.compile(
    r"(?i)^(cap_)?(all|sys_admin|sys_ptrace|sys_module|dac_read_search|dac_override|sys_rawio|bpf)$"
)


def _escape(option: str, value: str) -> str:
    """The option (with its value) by which a container reaches the host, else ``""``: a capability that lets it
    out, a host device, confinement turned off, the host's process or user namespace."""
    if option == "--cap-add" and any(_HOST_CAPABILITIES.match(cap) for cap in value.split(",")):
        return f"--cap-add {value}"
    if option == "--device" and value:
        return f"--device {value}"
    if option == "--security-opt" and re.search(r"unconfined|label[=:]disable|no-new-privileges[=:]false", value):
        return f"--security-opt {value}"
    if option in ("--pid", "--userns", "--cgroupns") and value == "host":
        return f"{option}=host"
    return ""


def _run(program: str, sub: str, args: tuple[str, ...]) -> ContainerReach | None:
    """``run|create`` gives the container every host directory it mounts (``-v ~/.ssh:/x``, ``--mount
    type=bind,src=…``); a named volume (``cache:/c``) is no host path. The mounts of another container
    (``--volumes-from``) and the daemon's socket (root on the host) cannot be judged."""
    sources: list[str] = []
    words = iter(args)
    for word in words:
        name, equals, value = word.partition("=")
        if name == "--volumes-from":
            return ContainerReach(unknowable=f"{program} {sub} --volumes-from mounts what another container has")
        escape = _escape(name, value if equals else next(words, "") if name in _ESCAPE_OPTIONS else "")
        if escape:
            return ContainerReach(unknowable=f"{program} {sub} {escape} reaches past the container into the host")
        if word in ("-v", "--volume", "--mount") or (word.startswith("-v") and not word.startswith("--")):
            value = word[2:].removeprefix("=") if word.startswith("-v") and len(word) > 2 else next(words, "")
            name = "--mount" if word == "--mount" else "-v"
        elif not (equals and name in ("--volume", "--mount")):
            continue
        if name == "--mount":
            fields = dict(field.partition("=")[::2] for field in value.split(","))
            source = fields.get("src", fields.get("source", ""))
        else:
            source = value.split(":", 1)[0] if ":" in value else ""
        if _DAEMON_SOCKET.search(source.rstrip("/")):
            return ContainerReach(unknowable=f"{program} {sub} mounts the container daemon's socket ({source})")
        if source.startswith(("/", ".", "~", "$")):
            sources.append(source)
    return ContainerReach(RecursiveRead(tuple(sources))) if sources else None


__all__ = ["COMPOSE_PROGRAMS", "ENGINES", "ContainerReach", "container_reach"]
