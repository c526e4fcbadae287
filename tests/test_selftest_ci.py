"""The ROCm selftest workflow (.github/workflows/rocm-selftest.yml), which has never run: it parses, says
at its top that it has never run, installs with the README's commands, runs the selftest with options the
selftest has, and keeps the report as an artifact even when the selftest fails."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ckgemm.selftest import cli

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "rocm-selftest.yml"


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def _run_lines(job) -> list[str]:
    return [line.strip() for step in job["steps"] for line in step.get("run", "").splitlines()]


def test_says_at_its_top_that_it_has_never_run():
    head = WORKFLOW.read_text().splitlines()[:8]
    assert any("HAS NEVER RUN" in line for line in head) and all(line.startswith("#") for line in head)


def test_runs_on_a_self_hosted_rocm_runner(workflow):
    job = workflow["jobs"]["selftest"]
    assert job["runs-on"][0] == "self-hosted" and "rocm" in job["runs-on"]
    assert "workflow_dispatch" in workflow[True]  # YAML 1.1 reads the key `on` as True


def test_installs_as_the_readme_says(workflow):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- ci:install -->\s*```bash\n(.*?)```", readme, re.S).group(1)
    lines = _run_lines(workflow["jobs"]["selftest"])
    for command in block.strip().splitlines():
        if command.startswith("python op_tests"):
            continue  # the README's first check; the selftest runs op_tests itself
        words = shlex.split(command)
        if "torch" in " ".join(words) and words[:2] == ["pip", "install"]:
            # the README's CPU torch pin is replaced by a ROCm torch from its wheel index; the rest is as written
            rest = [w for w in words[2:] if not w.startswith("torch")]
            assert any(shlex.split(line) == ["pip", "install", *rest] for line in lines), rest
            assert any(line.startswith('pip install --index-url "$TORCH_INDEX_URL"') for line in lines)
        else:
            assert command in lines, command


def test_runs_the_selftest_and_keeps_its_report(workflow):
    steps = workflow["jobs"]["selftest"]["steps"]
    run = next(s for s in steps if s.get("id") == "selftest")["run"]
    line = next(ln for ln in run.splitlines() if "ckgemm.selftest" in ln)
    args = shlex.split(line.replace("${{ inputs.quick && '--quick' || '' }}", "--quick"))
    options = cli.parse_args(args[args.index("ckgemm.selftest") + 1:])
    assert options.out == "$REPORT_DIR" and options.quick
    keep = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert keep["if"] == "always()" and "REPORT_DIR" in keep["with"]["path"]
    verdict = steps[-1]
    assert verdict["if"] == "always()" and "steps.selftest.outputs.status" in verdict["run"]
