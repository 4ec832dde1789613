"""What a command that acts on remote things (infrastructure, buckets, clusters) does and will touch.

Seen triaging: "What it will touch" for ``terraform apply`` said "Nothing Reviewer can name." and ``aws s3 sync
--delete`` read "--delete: not in the table". Each says now what the engine can establish, and no more: the
remote side is named, never counted or listed (Reviewer reads no cloud state).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.explain import explain_command
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.preview.effects import compute_effects


def _touches(command: str, cwd: Path) -> dict[str, list[dict[str, object]]]:
    return compute_effects(ToolCall("Bash", {"command": command}, cwd=str(cwd))).to_dict()


def _explained(command: str) -> str:
    return " ".join(segment.explanation for segment in explain_command(command))


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("terraform apply", "changes the infrastructure the configuration in the working directory describes"),
        ("terraform apply -auto-approve", "-auto-approve: do not ask before applying"),
        ("terraform destroy", "destroys every resource the configuration in the working directory manages"),
        ("aws s3 sync --delete ./build s3://site", "--delete: deletes files at the destination that the source lacks"),
        ("aws s3 sync ./build s3://site", "aws s3 sync: copies new and changed files from the source to the"),
        ("aws s3 rm --recursive s3://site/old", "--recursive: every object under the prefix"),
        ("gsutil -m rsync -d -r ./a gs://b/c", "-d: deletes files at the destination that the source lacks"),
        ("rsync -a --delete src/ dst/", "--delete: delete files in the destination that the source does not have"),
        ("kubectl delete -f x.yaml", "kubectl delete: delete resources"),
        # Seen triaging: "-chdir=envs/prod: not in the table", while "What it will touch" named envs/prod.
        ("terraform -chdir=envs/prod apply", "-chdir envs/prod: runs in envs/prod: the configuration is the one there"),
        ("terraform -chdir=x plan -out=tfplan", "-out tfplan: saves the plan to tfplan"),
        ("terraform -chdir=envs/prod apply", "terraform apply: changes the infrastructure"),
        ("terraform -chdir=x destroy -auto-approve", "terraform destroy: destroys every resource"),
    ],
)
def test_what_it_does_names_the_remote_action(command: str, says: str) -> None:
    explained = _explained(command)
    assert says in explained
    assert "not in the table" not in explained and "not in Reviewer's command table" not in explained


@pytest.mark.parametrize(
    ("command", "program", "subcommand", "option", "operands"),
    [
        ("terraform -chdir envs/prod apply", "terraform", "apply", "-chdir envs/prod", ()),
        ("terraform -no-color apply", "terraform", "apply", "-no-color", ()),
        ("terraform -weird value destroy", "terraform", "destroy", "-weird value", ()),
        ("kubectl --as admin delete pod web", "kubectl", "delete", "--as admin", ("pod", "web")),
    ],
)
def test_what_it_does_finds_the_subcommand_past_global_options_the_table_lacks(
    command: str, program: str, subcommand: str, option: str, operands: tuple[str, ...]
) -> None:
    """An option before the subcommand that the table does not know may take the next word as its value: the
    subcommand is found where the risk engine finds it (``without_global_options``), not read as operands
    ("terraform: infrastructure as code. Operands: envs/prod apply")."""
    (segment,) = explain_command(command)
    assert (segment.program, segment.subcommand) == (program, subcommand), segment.explanation
    assert option in segment.explanation and segment.operands == operands, segment.explanation


def test_terraform_apply_touches_the_infrastructure_its_configuration_describes(tmp_path: Path) -> None:
    touches = _touches("terraform apply -auto-approve", tmp_path)
    (network,) = touches["network"]
    assert network["host"] == "the infrastructure the configuration in the working directory describes"
    assert "creates, changes or destroys" in str(network["note"]) and "not worked out here" in str(network["note"])
    assert touches["reads"][0]["path"] == "."  # the configuration it reads

    placed = _touches("terraform -chdir=infra apply plan.out", tmp_path)
    assert placed["network"][0]["host"] == "the infrastructure the configuration in infra describes"
    assert "the changes saved in plan.out" in str(placed["network"][0]["note"])


def test_terraform_destroy_and_apply_destroy_say_every_resource(tmp_path: Path) -> None:
    for command in ("terraform destroy", "terraform apply -destroy"):
        (network,) = _touches(command, tmp_path)["network"]
        assert "destroys every resource it manages" in str(network["note"]), command
    assert _touches("terraform plan", tmp_path)["network"] == []  # read-only: nothing changes


def test_a_sync_with_delete_deletes_at_the_destination_that_the_source_lacks(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    touches = _touches("aws s3 sync --delete ./build s3://site/www", tmp_path)
    (deleted,) = touches["deletes"]
    assert deleted["path"] == "s3://site/www" and deleted["how"] == "files the source lacks"
    assert "remote" in str(deleted["note"])
    assert touches["writes"][0]["path"] == "s3://site/www"
    assert touches["reads"][0]["path"] == "./build"

    down = _touches("aws s3 sync s3://site/www ./mirror --delete", tmp_path)
    assert down["deletes"][0]["path"] == "./mirror" and down["deletes"][0]["inside_workspace"] is True
    assert _touches("aws s3 sync ./build s3://site/www", tmp_path)["deletes"] == []

    gsutil = _touches("gsutil -m rsync -d -r ./build gs://b/c", tmp_path)
    assert gsutil["deletes"][0]["path"] == "gs://b/c" and gsutil["deletes"][0]["how"] == "files the source lacks"
    assert gsutil["network"][0]["host"] == "the Google Cloud APIs"
    assert _touches("gsutil rsync -r ./build gs://b/c", tmp_path)["deletes"] == []


def test_aws_s3_rm_deletes_the_remote_objects_it_names(tmp_path: Path) -> None:
    (deleted,) = _touches("aws s3 rm --recursive s3://site/old", tmp_path)["deletes"]
    assert deleted["path"] == "s3://site/old" and deleted["how"] == "every object under it"


@pytest.mark.parametrize(
    ("command", "does"),
    [
        ("kubectl delete -f x.yaml", "deletes the resources x.yaml describes"),
        ("kubectl -n prod delete namespace prod", "deletes namespace prod (namespace prod)"),
        ("kubectl apply -f k8s/", "creates or updates the resources k8s/ describes"),
        ("kubectl delete pods --all -n dev", "deletes every resource of type pods (namespace dev)"),
    ],
)
def test_kubectl_says_what_it_does_to_the_cluster(command: str, does: str, tmp_path: Path) -> None:
    (network,) = _touches(command, tmp_path)["network"]
    assert network["host"] == "the cluster of the current kube context"
    assert str(network["note"]).startswith(does), network["note"]


def test_kubectl_reading_the_cluster_says_nothing_more(tmp_path: Path) -> None:
    (network,) = _touches("kubectl get pods -n dev", tmp_path)["network"]
    assert network["note"] == "the kubeconfig is not read (it holds credentials)"
