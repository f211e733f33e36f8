"""``pluggable-scheduler shadow``: the divergences a running daemon's shadow profiles found."""

from __future__ import annotations

import argparse
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from scheduler.cli.common import print_result
from scheduler.errors import UserError


def fetch(server: str, token: str | None, insecure: bool, query: dict[str, str]) -> Any:
    """GET ``/shadow`` of the daemon at ``server`` (``https://host:10259``)."""
    url = server.rstrip("/") + "/shadow"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context()
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        body = err.read().decode(errors="replace").strip()
        raise UserError(f"{url}: HTTP {err.code}: {body or err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise UserError(f"--server {server}: cannot connect: {reason}") from None
    except ValueError as err:
        raise UserError(f"{url}: the answer is not JSON: {err}") from None


def _decision(d: dict[str, Any]) -> str:
    node = d.get("node") or "<none>"
    tied = [n for n in d.get("tied") or [] if n != d.get("node")]
    more = int(d.get("tied_total") or 0) - 1 - len(tied)
    if more > 0:
        tied.append(f"{more} more")
    return f"{node} (tied with {', '.join(tied)})" if tied else node


def render_text(data: dict[str, Any]) -> str:
    items = data.get("divergences") or []
    if not items:
        return "No divergences."
    lines: list[str] = []
    for d in items:
        lines.append(
            f"{d['pod']}: {d['primary']} -> {_decision(d['primary_decision'])}, "
            f"shadow {d['profile']} -> {_decision(d['shadow_decision'])}  [{d['plugin']}]"
        )
        for node, sides in d["nodes"].items():
            for side in ("primary", "shadow"):
                report = sides[side]
                if report["rejected_by"]:
                    verdict = report["filter"][report["rejected_by"]]
                    why = "; ".join(verdict["reasons"]) or verdict["code"]
                    lines.append(
                        f"    {node} under {side}: rejected by {report['rejected_by']}: {why}"
                    )
                else:
                    scores = ", ".join(f"{p} {s['weighted']}" for p, s in report["score"].items())
                    lines.append(
                        f"    {node} under {side}: total {report['total']}"
                        + (f" ({scores})" if scores else "")
                    )
    return "\n".join(lines)


def _cmd_shadow(args: argparse.Namespace) -> int:
    token = None
    if args.token_file:
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as err:
            raise UserError(f"--token-file {args.token_file}: {err.strerror or err}") from None
    query = {k: str(v) for k, v in (("limit", args.limit), ("profile", args.profile)) if v}
    data = fetch(args.server, token, args.insecure_skip_tls_verify, query)
    print_result(args.output, lambda: data, lambda: render_text(data))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "shadow",
        help="show the decisions shadow profiles made differently (from a running daemon)",
        description="Read GET /shadow of a running daemon: the latest decisions of its shadow "
        "profiles (pluggableScheduler.shadowOf) that differ from their primary's, newest "
        "first, with the nodes involved as explain shows them under each profile.",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        default="https://127.0.0.1:10259",
        help="the daemon's serving address (default https://127.0.0.1:10259)",
    )
    parser.add_argument(
        "--token-file", metavar="FILE", help="bearer token (e.g. a ServiceAccount's)"
    )
    parser.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not verify the certificate"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="the newest N only")
    parser.add_argument("--profile", metavar="NAME", help="one shadow profile's only")
    parser.add_argument("--output", choices=["text", "json"], default="text")
    parser.set_defaults(func=_cmd_shadow)
