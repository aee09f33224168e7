#!/usr/bin/env python3
"""ci_files.py - check the shape of the CI pipeline files (tests/ci.bats).

  python3 tests/helpers/ci_files.py github .github/workflows/forge-pipeline.yml
  python3 tests/helpers/ci_files.py gitlab .gitlab-ci.yml

Parses the file as YAML (PyYAML, scripts/install-deps: python3-yaml) and
checks that it runs plan -> implement -> review -> test -> deploy as jobs,
each needing the one before, each running its phase on the artifact the job
before uploaded (the names and files line up) and storing its events, with
the database and the model's key from secrets.  Prints one line per problem
and exits 1, or prints "ok" and exits 0.
"""
import re
import sys

import yaml

PHASES = ["plan", "implement", "review", "test", "deploy"]


def scripts_of(steps):
    return "\n".join(s.get("run", "") for s in steps if isinstance(s, dict))


def check_command(problems, job, text, prev):
    """The job's phase reads the previous job's file and stores its events."""
    if f"forge-{job}" not in text:
        problems.append(f"{job}: does not run forge-{job}")
    if "forge-events store" not in text:
        problems.append(f"{job}: its events are not stored (forge-events store)")
    if not re.search(rf"forge-{job}\b[^\n|]*\|[^\n]*>\s*{job}\.jsonl", text):
        problems.append(f"{job}: its output is not written to {job}.jsonl")
    if prev and not re.search(rf"forge-{job}\b[^\n|]*<\s*{prev}\.jsonl", text):
        problems.append(f"{job}: does not read {prev}.jsonl, the artifact of {prev}")


def check_github(doc):
    problems = []
    jobs = doc.get("jobs") or {}
    if list(jobs) != PHASES:
        problems.append(f"jobs are {list(jobs)}, not {PHASES}")
    env = doc.get("env") or {}
    for var in ("FORGE_DB", "ANTHROPIC_API_KEY"):
        if not re.fullmatch(r"\$\{\{\s*secrets\.\w+\s*\}\}", str(env.get(var, ""))):
            problems.append(f"env.{var} does not come from a secret")
    if env.get("FORGE_PUSH_REMOTE") != "origin":
        problems.append("env.FORGE_PUSH_REMOTE is not origin")
    uploaded = {}
    for i, name in enumerate(PHASES):
        job = jobs.get(name) or {}
        prev = PHASES[i - 1] if i else None
        if (job.get("needs") or None) != prev:
            problems.append(f"{name}: needs {job.get('needs')!r}, not {prev!r}")
        steps = job.get("steps") or []
        uses = [s.get("uses", "") for s in steps]
        if not uses or not uses[0].startswith("actions/checkout@"):
            problems.append(f"{name}: does not start with actions/checkout")
        downloads = [s for s in steps if s.get("uses", "").startswith("actions/download-artifact@")]
        uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
        if prev:
            got = [d.get("with", {}).get("name") for d in downloads]
            if got != [uploaded.get(prev)]:
                problems.append(f"{name}: downloads {got}, not [{uploaded.get(prev)!r}] (uploaded by {prev})")
        elif downloads:
            problems.append(f"{name}: the first job downloads an artifact")
        if len(uploads) != 1 or uploads[0].get("with", {}).get("path") != f"{name}.jsonl":
            problems.append(f"{name}: does not upload {name}.jsonl (one upload-artifact)")
        else:
            uploaded[name] = uploads[0]["with"].get("name")
        check_command(problems, name, scripts_of(steps), prev)
        if prev and "git remote set-url origin" not in scripts_of(steps):
            problems.append(f"{name}: origin has no credentials for libgit2")
    return problems


def check_gitlab(doc):
    problems = []
    if doc.get("stages") != PHASES:
        problems.append(f"stages are {doc.get('stages')}, not {PHASES}")
    variables = doc.get("variables") or {}
    if variables.get("FORGE_PUSH_REMOTE") != "origin":
        problems.append("variables.FORGE_PUSH_REMOTE is not origin")
    if str(variables.get("GIT_DEPTH")) != "0":
        problems.append("GIT_DEPTH is not 0 (libgit2 does not fetch into a shallow clone)")
    for var in ("FORGE_DB", "ANTHROPIC_API_KEY"):
        if var in variables:
            problems.append(f"{var} is in the file: it belongs in the project's CI/CD variables")
    for i, name in enumerate(PHASES):
        job = doc.get(name) or {}
        prev = PHASES[i - 1] if i else None
        if job.get("stage") != name:
            problems.append(f"{name}: stage {job.get('stage')!r}")
        needs = job.get("needs")
        want = [{"job": prev, "artifacts": True}] if prev else None
        if needs != want:
            problems.append(f"{name}: needs {needs!r}, not {want!r}")
        paths = (job.get("artifacts") or {}).get("paths")
        if paths != [f"{name}.jsonl"]:
            problems.append(f"{name}: artifacts {paths!r}, not ['{name}.jsonl']")
        check_command(problems, name, "\n".join(job.get("script") or []), prev)
    return problems


def main():
    kind, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    problems = check_github(doc) if kind == "github" else check_gitlab(doc)
    for p in problems:
        print(f"{path}: {p}")
    if not problems:
        print("ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
