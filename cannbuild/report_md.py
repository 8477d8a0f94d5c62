"""report.md from report.json's data.

Every run writes a report, a no-op rerun included, so this is plain Python rather than
a Jinja template: rendering it was the one thing that made a no-op import Jinja.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence


def _cell(text: Any) -> str:
    """A value inside a table cell: a `|` would end the cell."""
    return str(text).replace("|", "\\|")


def _build(b: Mapping[str, Any]) -> str:
    if b.get("status") == "failed":
        out = "**Build: FAILED**"
        if b.get("failed_step"):
            out += f" at step {b.get('failed_step')} (exit {b.get('exit_code')})"
        out += f" in `{b.get('command')}`.\n"
        if b.get("error"):
            out += f"\n{b['error']}\n"
        if b.get("hint"):
            out += f"\nHint: {b['hint']}\n"
        if b.get("log"):
            out += f"\nLog: `{b['log']}`"
        if b.get("tail"):
            out += "\n\n```\n" + "".join(f"{line}\n" for line in b["tail"]) + "```\n"
        return out + "\n"
    if b.get("status"):
        return f"Build: {b['status']} (`{b.get('command')}`).\n"
    return ""


def _validation_line(v: Optional[Mapping[str, Any]]) -> str:
    if not v:
        return "**No validation in this run.**"
    out = f"**Validation: {v.get('status')}** (target: {v.get('target')}, "
    out += f"{v['duration_s']:.1f} s"
    if v.get("reused_from"):
        out += f"; reused from run {v['reused_from']}: nothing it checks has changed"
    out += ")"
    if v.get("reason"):
        out += f": {v['reason']}"
    return out


def built_from_text(f: Mapping[str, Any]) -> List[str]:
    """The build behind each package validated, and a later build attempt that failed
    (then the package judged is the older one): report.md's sentences, the terminal's
    lines."""
    packages = [f, *(f.get("also") or [])]
    runs = {p.get("run_id") for p in packages}
    if len(packages) > 1 and len(runs) == 1 and None not in runs:
        # installed by one run (the usual setup of several repos): said once, in one sentence
        commits = {k: v for p in packages for k, v in (p.get("commits") or {}).items()}
        out = (
            f"Validated the packages installed by {', '.join(str(p.get('step')) for p in packages)} "
            f"in run {packages[0].get('run_id')} (by {max(str(p.get('finished')) for p in packages)})"
            + _commits_text(commits)
        )
    else:
        out = (
            f"Validated the package{'s' if len(packages) > 1 else ''} installed by "
            + "; by ".join(_package_text(p) for p in packages)
        )
    n = f.get("newer_failed_attempt")
    if not n:
        return [out + "."]
    failed = f" at {n['failed_step']}" if n.get("failed_step") else ""
    return [
        out + ".",
        f"A later build attempt ({n.get('command')}, run {n.get('run_id')} at "
        f"{n.get('finished')}) {str(n.get('status') or 'failed').upper()}{failed}: this judges "
        f"the older package{'s' if len(packages) > 1 else ''}.",
    ]


def _package_text(p: Mapping[str, Any]) -> str:
    out = f"{p.get('step')} at {p.get('finished')}"
    if p.get("run_id"):
        out += f" (run {p['run_id']})"
    return out + _commits_text(p.get("commits") or {})


def _commits_text(commits: Mapping[str, str]) -> str:
    if not commits:
        return ""
    return ", built from " + ", ".join(
        f"{repo} `{commit[:12]}`" for repo, commit in commits.items()
    )


def _artifacts(artifacts: Sequence[Mapping[str, Any]]) -> str:
    rows = ["", "| package | sha256 | reproducible |", "|---|---|---|"]
    for a in artifacts:
        if a.get("reproducible"):
            verdict = "yes"
        elif a.get("varies"):
            verdict = "no: " + "; ".join(f"{x['file']} {_cell(x['why'])}" for x in a["varies"])
        else:
            verdict = "-"
        rows.append(f"| `{a.get('path')}` | `{a.get('sha256')}` | {verdict} |")
    return "\n".join(rows) + "\n"


def _host(r: Mapping[str, Any]) -> List[str]:
    h = r["host"]
    cann = h["cann"]
    chip = f", {h['chip']}" if h.get("chip") else ""
    lines = [
        "## Host",
        "",
        "| | |",
        "|---|---|",
        f"| CANN | {cann.get('version')} at `{cann.get('path')}` ({cann.get('layout')} layout, "
        f"found by {cann.get('found_by')}) |",
        f"| SoC | {h.get('soc')} ({h.get('variant')}{chip}), {h.get('npu_count')} NPUs |",
        f"| driver | {h['driver'].get('version') or 'none'} |",
        f"| torch / torch_npu | {h.get('torch') or '-'} / {h.get('torch_npu') or '-'} |",
        f"| Python | {h.get('python')} on {h.get('arch')} |",
    ]
    s = r.get("sandbox")
    if s:
        lines.append(
            f"| sandbox | {s.get('variant')} with CANN {s.get('cann')} at `{s.get('dir')}` |"
        )
    return lines


def _sources(r: Mapping[str, Any]) -> List[str]:
    recipe = r["recipe"]
    lines = [
        "",
        "## Recipe and sources",
        "",
        f"Recipe **{recipe.get('name')}** (`{recipe.get('path')}`, sha256 "
        f"{recipe['digest'][:12]})"
        + (
            f", operator sources of release {recipe['ops_release']}."
            if recipe.get("ops_release")
            else "."
        ),
    ]
    lock = r.get("lock")
    if lock:
        lines += ["", "| source | ref | commit |", "|---|---|---|"]
        lines += [f"| {x['name']} | {x['ref']} | `{x['commit'][:12]}` |" for x in lock["repos"]]
        lines += [
            f"| {a['name']} | {a['url']} | sha256 `{a['sha256'][:12]}`"
            + (" (the sandbox's stand-in)" if a.get("stand_in") else "")
            + " |"
            for a in lock["third_party"]
        ]
        lines += [
            f"- stand-in {a['name']}: {a['stand_in']}"
            for a in lock["third_party"]
            if a.get("stand_in")
        ]
    return lines


def _steps(steps: Sequence[Mapping[str, Any]]) -> List[str]:
    lines = ["", "## Steps", "", "| step | status | duration | log |", "|---|---|---|---|"]
    for s in steps:
        duration = "" if s.get("duration_s") is None else f"{s['duration_s']:.1f} s"
        log = f"`{s['log']}`" if s.get("log") else ""
        lines.append(f"| {s.get('name')} | {s.get('status')} | {duration} | {log} |")
    return lines


def _figure(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _standard(v: Mapping[str, Any]) -> List[str]:
    """Which standard the verdicts rest on, the one measured beside it, and where the two
    disagree (both verdicts).  Nothing for a report from before the standard was measured."""
    s = v.get("precision_standard")
    if not s:
        return []
    lines = [
        f"Also measured: {s.get('name')}: {s.get('rule')} ({s.get('source')}). "
        f"Every verdict here rests on the rule above (decided by: {v.get('decided_by')}); "
        "the upstream standard is shown beside it and never changes it.",
        "",
    ]
    split = v.get("disagreements") or []
    if split:
        by_check: Dict[str, List[str]] = {}
        for d in split:
            by_check.setdefault(d["check"], []).append(d["name"])
        lines += [
            f"**The two standards differ on {len(split)}** (rule verdict stands): "
            + "; ".join(f"{check}: {', '.join(names)}" for check, names in by_check.items()),
            "",
        ]
    return lines


def _upstream(c: Mapping[str, Any]) -> str:
    """A case's MERE, MARE and upstream verdict cells (`-` where not measured)."""
    p = c.get("precision") or {}
    verdict = p.get("status", "-")
    verdict = f"differs ({verdict})" if c.get("disagree") else verdict  # the rule decides
    return f" {_figure(p.get('mere'), '.3g')} | {_figure(p.get('mare'), '.3g')} | {verdict} |"


def _validation(v: Mapping[str, Any]) -> List[str]:
    lines = ["## Validation", "", f"Rule: {v.get('rule')}", "", *_standard(v)]
    repos = v.get("repos") or []
    if len(repos) < 2:  # one repository: its checks and cases, as before there were several
        return lines + _checks_and_cases(v)
    lines += ["| repository | check | status | why this operator |", "|---|---|---|---|"]
    lines += [
        f"| {r['repo']} | {r['check']} | {r['status']} | {_cell(r.get('why') or '-')} |"
        for r in repos
    ]
    for r in repos:
        reason = f": {_cell(r['reason'])}" if r.get("reason") else ""
        lines += ["", f"### {r['repo']} ({r['check']}): {r['status']}{reason}", ""]
        lines += _checks_and_cases(r)
    return lines


def _checks_and_cases(v: Mapping[str, Any]) -> List[str]:
    """One repository's checks, then its cases: FlashAttention's with their shapes and
    errors, another check's by name, verdict and detail."""
    lines = ["| check | status | detail |", "|---|---|---|"]
    lines += [f"| {c['id']} | {c['status']} | {_cell(c['message'])} |" for c in v["checks"]]
    if v["cases"] and any("B" not in c for c in v["cases"]):
        lines += [
            "",
            "| case | verdict | MERE | MARE | opbase | detail |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {c.get('name')} | {c.get('status')} |{_upstream(c)} {_cell(c.get('message', ''))} |"
            for c in v["cases"]
        ]
        return lines
    # The upstream columns only where the cases carry them: an older report renders as it did.
    measured = any("precision" in c for c in v["cases"])
    lines += [
        "",
        "| case | dtype | layout | B,N1,N2,S,D | mask | max abs err | torch same-dtype err "
        "| bound | softmax max/sum err | kernel ms | verdict |"
        + (" MERE | MARE | opbase |" if measured else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if measured else ""),
    ]
    for c in v["cases"]:
        seq = c["S"]
        if c.get("seq_q"):  # VarLen: each sequence's query and key lengths
            seq = "q " + "+".join(map(str, c["seq_q"])) + " kv " + "+".join(map(str, c["seq_kv"]))
        shape = f"{c['B']},{c['N1']},{c['N2']},{seq},{c['D']}"
        softmax = f"{_figure(c['softmax_max_err'], '.2g')} / {_figure(c['softmax_sum_err'], '.2g')}"
        lines.append(
            f"| {c['name']} | {c['dtype']} | {c['layout']} | {shape} | "
            f"{'causal' if c['causal_mask'] else '-'} | {_figure(c['max_abs_err'], '.3g')} | "
            f"{_figure(c['ref_same_dtype_max_err'], '.3g')} | {_figure(c['bound'], '.3g')} | "
            f"{softmax} | {_figure(c['kernel_ms'], '.1f')} | {c['status']} |"
            + (_upstream(c) if measured else "")
        )
    lines.append("")
    for c in v["cases"]:
        p = c.get("precision") or {}
        if c.get("disagree"):
            lines.append(
                f"- **{c['name']}**: the rule says {c['status']} ({_cell(c['message'])}); "
                f"{p.get('standard')} says {p.get('status')} ({_cell(p.get('message'))})"
            )
    for c in v["cases"]:
        if c["status"] != "FAIL":
            continue
        line = f"- **{c['name']}**: {c['message']}"
        if c.get("first_mismatches"):
            line += " (first mismatches: " + "; ".join(
                f"{m['index']} got {m['got']} want {m['want']}" for m in c["first_mismatches"]
            )
            line += ")"
        lines.append(line)
    return lines


def render_markdown(r: Mapping[str, Any]) -> str:
    v = r.get("validation")
    head = f"# cannbuild report {r['run_id']}\n\n"
    head += _build(r.get("build") or {}) + "\n"
    head += _validation_line(v) + "\n"
    if r.get("built_from"):
        head += f"\n{' '.join(built_from_text(r['built_from']))}\n"
    p = r.get("package")
    if p:
        head += (
            f"\nValidated the shipped package `{p.get('path')}` (sha256 `{p.get('sha256')}`), "
            f"installed for this check into `{p.get('installed_into')}`.\n"
        )
    if r.get("artifacts"):
        head += _artifacts(r["artifacts"])
    head += "\n"
    if r.get("cache"):
        head += f"{r['cache'].get('line')}\n"
    body = ["", *_host(r), *_sources(r), *_steps(r["steps"]), ""]
    if v:
        body += _validation(v)
    return head + "\n".join(body) + "\n\n"


__all__ = ["built_from_text", "render_markdown"]
