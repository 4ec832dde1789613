"""Commands that read a secret no file word names: a program that prints a stored credential, a dump of the
environment, a variable of the host's environment that holds a secret or names a credential file.

Why: ``gh auth token``, ``git credential fill``, ``gcloud auth print-access-token``, ``printenv`` and ``echo
$GITHUB_TOKEN`` hand the agent a token as surely as ``cat ~/.config/gh/hosts.yml`` does, and ``cat
$KUBECONFIG`` reads a credential file through a value only the host knows. None of them names a sensitive file,
so the path checks passed them; each is high risk here, so no wildcard allow settles it.

Variables the command sets itself are the caller's (:mod:`.shell_variables` judges them by their values); a word
in single quotes holds no expansion.
"""

from __future__ import annotations

import ipaddress
import re

from reviewer_app.domain.tool_args import METADATA_NAME_HINTS, WILDCARD_DNS

# (program, words that must follow it in order among its non-option words, options of which one must be given or
# () for none, what it prints)
_CREDENTIAL_COMMANDS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("gh", ("auth", "token"), (), "the GitHub CLI's token"),
    ("gh", ("auth", "status"), ("-t", "--show-token"), "the GitHub CLI's token"),
    ("git", ("credential", "fill"), (), "the password git's credential helper stores"),
    ("git", ("credential-store", "get"), (), "the password git's credential helper stores"),
    ("git", ("credential-cache", "get"), (), "the password git's credential helper stores"),
    ("gcloud", ("auth", "print-access-token"), (), "a Google Cloud access token"),
    ("gcloud", ("auth", "print-identity-token"), (), "a Google Cloud identity token"),
    ("gcloud", ("auth", "application-default", "print-access-token"), (), "a Google Cloud access token"),
    ("gcloud", ("config", "config-helper"), (), "a Google Cloud access token"),
    ("az", ("account", "get-access-token"), (), "an Azure access token"),
    ("aws", ("configure", "export-credentials"), (), "AWS credentials"),
    ("aws", ("ecr", "get-login-password"), (), "a registry password"),
    ("aws", ("sts", "get-session-token"), (), "AWS credentials"),
    ("aws", ("sts", "assume-role"), (), "AWS credentials"),
    ("aws", ("secretsmanager", "get-secret-value"), (), "a stored secret"),
    ("aws", ("ssm", "get-parameter"), ("--with-decryption",), "a stored secret"),
    ("aws", ("ssm", "get-parameters"), ("--with-decryption",), "a stored secret"),
    ("kubectl", ("config", "view"), ("--raw", "--flatten"), "Kubernetes credentials"),
    ("kubectl", ("get", "secret"), ("-o", "--output"), "Kubernetes secrets"),
    ("kubectl", ("get", "secrets"), ("-o", "--output"), "Kubernetes secrets"),
    ("kubectl", ("create", "token"), (), "a Kubernetes token"),
    ("op", ("read",), (), "a 1Password secret"),
    ("op", ("inject",), (), "1Password secrets"),
    ("op", ("item", "get"), (), "a 1Password item"),
    ("vault", ("read",), (), "a Vault secret"),
    ("vault", ("kv", "get"), (), "a Vault secret"),
    ("vault", ("print", "token"), (), "the Vault token"),
    ("pass", ("show",), (), "a password"),
    ("gopass", ("show",), (), "a password"),
    ("security", ("find-generic-password",), ("-w", "-g"), "a keychain password"),
    ("security", ("find-internet-password",), ("-w", "-g"), "a keychain password"),
    ("security", ("dump-keychain",), (), "the keychain"),
    ("secret-tool", ("lookup",), (), "a keyring secret"),
    ("keyring", ("get",), (), "a keyring secret"),
    ("bw", ("get",), (), "a Bitwarden secret"),
    ("lpass", ("show",), (), "a LastPass secret"),
    ("heroku", ("auth:token",), (), "the Heroku token"),
    ("doppler", ("secrets",), (), "Doppler secrets"),
    ("sops", (), ("-d", "--decrypt"), "a decrypted secrets file"),
    ("ansible-vault", ("view",), (), "a decrypted vault"),
    ("ansible-vault", ("decrypt",), (), "a decrypted vault"),
    ("gpg", (), ("--export-secret-keys", "--export-secret-subkeys"), "GnuPG private keys"),
)
_PASS_LOOKS = frozenset({"ls", "list", "find", "search", "help", "version", "init", "git", "generate", "insert"})
_AWS_SECRET_KEY = re.compile(r"secret|token|key", re.I)

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION", re.I
)
"""A variable whose name says it holds a secret (``GITHUB_TOKEN``, ``ANTHROPIC_API_KEY``, ``SSH_AUTH_SOCK``)."""
_CREDENTIAL_PLACES = frozenset(
    {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "KUBECONFIG", "GNUPGHOME",
     "DOCKER_CONFIG", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR", "AWS_CONFIG_FILE", "NETRC", "PGPASSFILE", "CODEX_HOME",
     "CLAUDE_CONFIG_DIR", "GH_CONFIG_DIR", "COPILOT_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG", "REVIEWER_DB",
     "REVIEWER_CONFIG", "OLDPWD", "NPM_CONFIG_USERCONFIG", "PIP_CONFIG_FILE", "RCLONE_CONFIG", "BOTO_CONFIG",
     "TF_CLI_CONFIG_FILE", "VAULT_CONFIG_PATH", "CARGO_HOME", "GRADLE_USER_HOME", "ZDOTDIR", "USERPROFILE",
     "APPDATA", "LOCALAPPDATA"}
)  # fmt: skip
"""Variables of the host's that name where credentials or agent settings live (``cat $KUBECONFIG``)."""
_EXPANSION = re.compile(r"\$\{?#?!?([A-Za-z_][A-Za-z0-9_]*)")
_SINGLE_QUOTED = re.compile(r"'[^']*'")


def credential_printed(program: str, args: tuple[str, ...]) -> str | None:
    """What stored credential ``program args`` prints (``gh auth token``: the GitHub CLI's token), else None."""
    words = [word for word in args if not word.startswith("-")]
    for name, sequence, options, what in _CREDENTIAL_COMMANDS:
        if name != program or not _contains(words, sequence):
            continue
        if not options or any(word.split("=", 1)[0] in options or _short_in(word, options) for word in args):
            return what
    if program == "pass" and words and words[0] not in _PASS_LOOKS:
        return "a password"  # ``pass NAME`` shows it
    if program == "aws" and _contains(words, ("configure", "get")) and any(map(_AWS_SECRET_KEY.search, words)):
        return "AWS credentials"
    return None


def _contains(words: list[str], sequence: tuple[str, ...]) -> bool:
    size = len(sequence)
    return any(tuple(words[start : start + size]) == sequence for start in range(len(words) - size + 1))


def _short_in(word: str, options: tuple[str, ...]) -> bool:
    """``-wg`` gives ``-w``: a short option inside a cluster."""
    letters = {option[1] for option in options if len(option) == 2}
    return word.startswith("-") and not word.startswith("--") and bool(letters & set(word[1:]))


def environment_dumped(argv: tuple[str, ...]) -> bool:
    """Whether the command prints the environment (``env``, ``printenv``, ``export -p``): the host's tokens and
    keys among it."""
    program, args = argv[0].rpartition("/")[2], argv[1:]
    if program == "env":
        return all(word.startswith("-") or "=" in word for word in args) and not any("S" in word for word in args)
    if program == "printenv":
        names = [word for word in args if not word.startswith("-")]
        return not names or any(_SECRET_NAME.search(name) for name in names)
    return program in ("export", "declare", "typeset") and any(word in ("-p", "-x", "-px", "-xp") for word in args)


def host_variables(texts: list[str], own: set[str]) -> list[str]:
    """The variables of the host's environment the words ``texts`` (as written) expand that hold a secret or
    name where one lives; ``own``: the command's own variables, judged by their values instead."""
    found = []
    for text in texts:
        for name in _EXPANSION.findall(_SINGLE_QUOTED.sub("", text)):
            if name not in own and (name in _CREDENTIAL_PLACES or _SECRET_NAME.search(name)):
                found.append(name)
    return sorted(set(found))


_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.com",
                             "instance-data", "instance-data.ec2.internal"})  # fmt: skip
_METADATA_ADDRESSES = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fd00:ec2::254/128"),
                       ipaddress.ip_network("100.100.100.200/32"), ipaddress.ip_network("fe80::/10"))  # fmt: skip


def reaches_instance_metadata(word: str) -> bool:
    """Whether ``word`` is a URL (or a bare host and path, as curl takes one) of a cloud's instance metadata
    service, which hands out the machine's credentials: the host as the WHATWG parser reads it (``2852039166`` and
    ``0xa9fea9fe`` are ``169.254.169.254``), any link-local address, an IPv4-mapped one included."""
    if not word or word.startswith("-") or any(mark in word for mark in " \n"):
        return False
    from reviewer_app.domain.urls import host_of

    host = host_of(word if "://" in word else "http://" + word)
    if host is None:
        return False
    host = host.rstrip(".").casefold()
    if host in _METADATA_HOSTS or any(hint in host for hint in METADATA_NAME_HINTS):
        return True
    for address in _addresses_named(host):
        mapped = getattr(address, "ipv4_mapped", None) or address
        if any(mapped in network for network in _METADATA_ADDRESSES if network.version == mapped.version):
            return True
    return False


def _addresses_named(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address ``host`` is, or that a wildcard DNS service's name (``app.10.0.0.1.nip.io``,
    ``app-10-0-0-1.nip.io``, ``app-0a000001.nip.io``, ``fd00-ec2--254.sslip.io``) resolves to: read from the name, as
    the service does."""
    candidates = [host.strip("[]")]
    service = next((name for name in WILDCARD_DNS if host.endswith("." + name)), None)
    if service is not None:
        labels = host.removesuffix("." + service).split(".")
        dashed = labels[-1].split("-")
        candidates += [".".join(labels[-4:]), ".".join(dashed[-4:]), labels[-1].replace("-", ":")]
        if re.fullmatch(r"[0-9a-f]{8}", dashed[-1]):
            candidates.append(str(ipaddress.IPv4Address(int(dashed[-1], 16))))
    found = []
    for candidate in candidates:
        try:
            found.append(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return found


__all__ = ["credential_printed", "environment_dumped", "host_variables", "reaches_instance_metadata"]
