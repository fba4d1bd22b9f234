"""`tether rules list|test`: every rule in force with its source, and every rule's examples checked.

`list` opens the session like every other command, so it shows exactly the rules the policy uses
(a broken rule stops it with the error naming the file and line). `test` checks each `[[rules]]`
table of each layer on its own, so one broken rule does not hide the others; it exits 1 when any
rule fails.
"""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli._common import add_workspace_arg, print_json, resolve_workspace


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("rules", help="list the rules in force, or test their examples")
    actions = parser.add_subparsers(dest="rules_action", metavar="{list,test}", required=True)
    listing = actions.add_parser("list", help="every rule with its decision, pattern, source and layer")
    listing.add_argument("--json", action="store_true", help="one JSON object: {rules: [...]}")
    add_workspace_arg(listing)
    listing.set_defaults(handler=_list)
    testing = actions.add_parser("test", help="check every rule's match / not_match examples")
    testing.add_argument("--json", action="store_true", help="one JSON object: {ok, rules: [...]}")
    add_workspace_arg(testing)
    testing.set_defaults(handler=_test)


def _list(args: argparse.Namespace) -> int:
    from tether.cli._session import open_cli_session

    policy = open_cli_session(args).config.policy
    rows: list[dict[str, Any]] = [rule.to_json() for rule in policy.rules]
    rows += [
        _prefix_row(words, "allow", "command_whitelist / [policy] allow") for words in policy.extra_allowed
    ]
    rows += [_prefix_row(words, "deny", "[policy] deny") for words in policy.denied]
    if args.json:
        print_json({"rules": rows})
        return 0
    if not rows:
        print('No rules configured: the built-in policy decides (docs/policy.md, "Rules as data").')
        return 0
    width = max(len(_pattern(row)) for row in rows)
    for row in rows:
        print(f"{row['decision']:<5}  {_pattern(row):<{width}}  {row['source']}")
        if row.get("justification"):
            print(f"       {row['justification']}")
    return 0


def _prefix_row(words: str, decision: str, source: str) -> dict[str, Any]:
    return {
        "id": "user.prefix",
        "pattern": words.split(),
        "decision": decision,
        "source": source,
        "layer": "user",
    }


def _pattern(row: dict[str, Any]) -> str:
    return " ".join(w if isinstance(w, str) else "{" + "|".join(w) + "}" for w in row["pattern"])


def _test(args: argparse.Namespace) -> int:
    from tether.core.session import check_rules

    reports = check_rules(resolve_workspace(getattr(args, "workspace", None)))
    ok = all(not report.failures for report in reports)
    if args.json:
        print_json({"ok": ok, "rules": [report.to_json() for report in reports]})
        return 0 if ok else 1
    if not reports:
        print("No [[rules]] in the user, managed or project config.")
    for report in reports:
        status = "ok  " if not report.failures else "FAIL"
        what = f"{report.decision} `{report.pattern}`" if report.pattern else "rule"
        print(f"{status}  {what}  ({report.source}; {report.examples} example(s))")
        for failure in report.failures:
            print(f"      {failure}")
    failed = sum(1 for report in reports if report.failures)
    print(f"{len(reports) - failed} passed, {failed} failed")
    return 0 if ok else 1
