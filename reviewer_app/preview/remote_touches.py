"""What commands that act on remote things will touch: infrastructure (``terraform apply``/``destroy``), a cluster
(what ``kubectl delete``/``apply`` do to it) and cloud storage (``aws s3 sync|cp|mv|rm|rb``, ``gsutil
rsync|cp|mv|rm``).

Reviewer reads no cloud state: the remote side is named as written (``s3://bucket/www``, "the infrastructure
the configuration in infra describes") with what the command does to it, never counted or listed. Local paths on
either side go through the collector like any other path (facts, inside or outside the workspace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reviewer_app.domain.recursive_reads import copy_option_values, split_options

if TYPE_CHECKING:
    from reviewer_app.preview.command_touches import EffectCollector

REMOTE_NOTE = "a remote location: what it holds is not read"
SOURCE_LACKS = "files the source lacks"
_TERRAFORM_VALUES = frozenset({"-var", "-var-file", "-target", "-replace", "-parallelism", "-lock-timeout", "-state",
                               "-state-out", "-backup"})  # fmt: skip
_BUCKET_SCHEMES = {"aws": "s3://", "gsutil": "gs://"}
_KUBECTL_VALUES = frozenset({"-n", "--namespace", "--context", "-f", "--filename", "-o", "--output", "-l", "--selector",
                             "--kubeconfig", "--cluster", "--user", "-k", "--kustomize", "--grace-period"})  # fmt: skip
_KUBECTL_CHANGES = {"delete": "deletes", "apply": "creates or updates", "create": "creates", "replace": "replaces"}


def terraform_touches(collector: EffectCollector, args: tuple[str, ...], text: str) -> None:
    """``terraform [-chdir=DIR] apply|destroy``: the infrastructure its configuration describes (the plan is not
    worked out: that would run the providers) and the configuration it reads."""
    directory = next((word.partition("=")[2] for word in args if word.startswith("-chdir=")), None) or None
    operands, flags = _terraform_words(args)
    if not operands or operands[0] not in ("apply", "destroy"):
        return
    sub, plan = operands[0], (operands[1] if operands[0] == "apply" and len(operands) > 1 else None)
    if sub == "destroy" or "-destroy" in flags:
        does = "destroys every resource it manages"
    elif plan is not None:
        does = f"makes the changes saved in {plan}"
    else:
        does = "creates, changes or destroys resources as its plan says (the plan is not worked out here)"
    where = directory or "the working directory"
    collector.host(
        f"the infrastructure the configuration in {where} describes",
        text,
        note=f"{does}; uses this machine's stored cloud credentials",
    )
    collector.path("reads", directory or ".", text, how="the configuration")
    if plan is not None:
        collector.path("reads", plan, text, how="the saved plan")


def _terraform_words(args: tuple[str, ...]) -> tuple[list[str], set[str]]:
    """Terraform's operands and its flags' names: one dash, a value after ``=`` or in the next word."""
    operands: list[str] = []
    flags: set[str] = set()
    index = 0
    while index < len(args):
        name, equals, _ = args[index].partition("=")
        if name.startswith("-") and len(name) > 1:
            flag = "-" + name.lstrip("-")  # terraform reads --destroy as -destroy
            flags.add(flag)
            index += 2 if not equals and flag in _TERRAFORM_VALUES else 1
            continue
        operands.append(args[index])
        index += 1
    return operands, flags


def kubectl_does(args: tuple[str, ...]) -> str | None:
    """What ``kubectl delete|apply|create|replace`` does to the cluster, in words (None for the other subcommands):
    the resources named, or those a manifest (``-f``) or a kustomization (``-k``) describes, and the namespace."""
    operands: list[str] = []
    given: dict[str, str] = {}
    index = 0
    while index < len(args):
        name, equals, value = args[index].partition("=")
        if name.startswith("-") and len(name) > 1:
            if not equals and name in _KUBECTL_VALUES and index + 1 < len(args):
                value, index = args[index + 1], index + 1
            given[name] = value
        else:
            operands.append(args[index])
        index += 1
    if not operands or operands[0] not in _KUBECTL_CHANGES:
        return None
    verb, named = _KUBECTL_CHANGES[operands[0]], operands[1:]
    source = given.get("-f") or given.get("--filename") or given.get("-k") or given.get("--kustomize")
    if source:
        what = f"the resources {source} describes"
    elif "--all" in given and named:
        what = f"every resource of type {named[0]}"
    else:
        what = " ".join(named) or "the resources named"
    namespace = given.get("-n") or given.get("--namespace")
    return f"{verb} {what}" + (f" (namespace {namespace})" if namespace else "")


def bucket_touches(collector: EffectCollector, program: str, args: tuple[str, ...], text: str) -> None:
    """``aws s3 …`` and ``gsutil …``: what a copy, sync, move or removal writes and deletes on either side."""
    scheme = _BUCKET_SCHEMES[program]
    operands, seen, _ = split_options(args, copy_option_values(program))
    if program == "aws":
        if operands[:1] != ["s3"]:
            return
        operands = operands[1:]
    if not operands:
        return
    action, paths = operands[0], operands[1:]
    recursive = bool({"r", "R", "--recursive"} & set(seen))
    if action in ("sync", "rsync", "cp", "mv") and len(paths) >= 2:
        *sources, destination = paths
        if action == "mv":
            for source in sources:
                _touch(collector, scheme, "deletes", source, text, "moved to " + destination)
        _touch(collector, scheme, "writes", destination, text, "copied into")
        if action in ("sync", "rsync") and ({"--delete", "d"} & set(seen)):
            _touch(collector, scheme, "deletes", destination, text, SOURCE_LACKS)
    elif action == "rm":
        for path in paths:
            _touch(collector, scheme, "deletes", path, text, "every object under it" if recursive else "the object")
    elif action == "rb" and paths:
        force = "--force" in seen
        _touch(
            collector, scheme, "deletes", paths[0], text, "the bucket" + (" and every object in it" if force else "")
        )


def _touch(collector: EffectCollector, scheme: str, kind: str, written: str, text: str, how: str) -> None:
    """A bucket path is named as written; a local one is looked at (the source's reads are the risk engine's)."""
    if written.startswith(scheme):
        collector.items[kind].append({"path": written, "by": text, "how": how, "note": REMOTE_NOTE})
    elif kind != "writes" or written != "-":
        collector.path(kind, written, text, recursive=kind == "deletes", how=how)
