"""The docs' `claude mcp add` line parses as Claude Code's CLI parses it.

No `claude` runs here, so the line is parsed by a model of the command as Claude Code
documents it: `claude mcp add --help` prints `Usage: claude mcp add [options] <name>
<commandOrUrl> [args...]`, a commander.js command whose options include `-s, --scope
<scope>`, `-t, --transport <transport>`, `-e, --env <env...>` and `-H, --header
<header...>`. The two `<...>` options with `...` are variadic: commander gives them every
following word that does not start with `-`, so `--env KEY=V boris -- cmd` hands it `boris`
too, and Claude Code refuses ("Invalid environment variable format: boris", reported as
anthropics/claude-code#29221 and #62332 against the form its own docs showed, still so in
2.1.150). Options after the name, or `--` before the command, keep the name a name (the help's
own example in 2.0.29: `claude mcp add --transport stdio airtable --env
AIRTABLE_API_KEY=YOUR_KEY -- npx -y airtable-mcp-server`). The model holds to both reports,
and the docs' line must parse in it to exactly the server its `.mcp.json` registers.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: `claude mcp add`'s options: (short, long) -> variadic.
OPTIONS = {
    ("-s", "--scope"): False,
    ("-t", "--transport"): False,
    ("-e", "--env"): True,
    ("-H", "--header"): True,
}
NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class Refused(Exception):
    """What `claude mcp add` says and exits 1 with."""


@dataclass
class Added:
    name: str
    command: str
    args: list[str]
    transport: str = "stdio"
    scope: str = "local"
    env: dict[str, str] = field(default_factory=dict)
    headers: list[str] = field(default_factory=list)


def _option(word: str) -> tuple[str, bool]:
    for (short, long), variadic in OPTIONS.items():
        if word in (short, long):
            return long, variadic
    raise Refused(f"error: unknown option '{word}'")


def claude_mcp_add(argv: list[str]) -> Added:
    """`claude mcp add ARGV...` as commander parses it, then as Claude Code checks it."""
    values: dict[str, list[str]] = {}
    operands: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":  # the end of options: the rest are operands, whatever they look like
            operands += argv[i:]
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        given = None
        if word.startswith("--") and "=" in word:
            word, given = word.split("=", 1)
        long, variadic = _option(word)
        taken = values.setdefault(long, [])
        if given is not None:
            taken.append(given)
        elif i < len(argv):
            taken.append(argv[i])  # a required value: the next word, whatever it is
            i += 1
        else:
            raise Refused(f"error: option '{long}' argument missing")
        if variadic:  # and every following word that is not an option
            while i < len(argv) and not argv[i].startswith("-"):
                taken.append(argv[i])
                i += 1
    if not operands:
        raise Refused("error: missing required argument 'name'")
    if len(operands) < 2:
        raise Refused("error: missing required argument 'commandOrUrl'")
    name, command, *args = operands
    if not NAME.match(name):
        raise Refused(
            f"Invalid name {name}. Names can only contain letters, numbers, hyphens, and underscores."
        )
    env: dict[str, str] = {}
    for pair in values.get("--env", []):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise Refused(
                f"Invalid environment variable format: {pair}, environment variables should "
                "be added as: -e KEY1=value1 -e KEY2=value2"
            )
        env[key] = value
    transport = (values.get("--transport") or ["stdio"])[-1]
    scope = (values.get("--scope") or ["local"])[-1]
    return Added(name, command, args, transport, scope, env, values.get("--header", []))


def _words(line: str) -> list[str]:
    words = shlex.split(line.replace("\\\n", " "))
    assert words[:3] == ["claude", "mcp", "add"], words
    return words[3:]


def test_the_model_holds_to_what_claude_code_was_reported_to_do() -> None:
    # The docs' old form: --env swallows the name.
    with pytest.raises(Refused, match="Invalid environment variable format: airtable"):
        claude_mcp_add(
            _words(
                "claude mcp add --transport stdio --env AIRTABLE_API_KEY=YOUR_KEY airtable "
                "-- npx -y airtable-mcp-server"
            )
        )
    with pytest.raises(Refused, match="Invalid environment variable format: my-server"):
        claude_mcp_add(_words("claude mcp add -e API_KEY=xxx my-server -- npx my-mcp-server"))
    # The workarounds the reports give: the name first, or `--` before it.
    added = claude_mcp_add(
        _words(
            "claude mcp add --transport stdio airtable --env AIRTABLE_API_KEY=YOUR_KEY "
            "-- npx -y airtable-mcp-server"
        )
    )
    assert (added.name, added.command, added.args) == (
        "airtable",
        "npx",
        ["-y", "airtable-mcp-server"],
    )
    assert added.env == {"AIRTABLE_API_KEY": "YOUR_KEY"}
    added = claude_mcp_add(_words("claude mcp add -s user -e FOO=bar -- testparser echo hello"))
    assert (added.name, added.command, added.args, added.scope) == (
        "testparser",
        "echo",
        ["hello"],
        "user",
    )


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"(?ms)^```sh\n(.*?)^```", text)


def _claude_mcp_add_lines(text: str) -> list[str]:
    found = []
    for block in _sh_blocks(text):
        joined = block.replace("\\\n", " ")
        found += [
            line.strip()
            for line in joined.splitlines()
            if line.strip().startswith("claude mcp add")
        ]
    return found


def test_the_docs_line_registers_the_server_their_mcp_json_does() -> None:
    page = ROOT / "docs" / "agents" / "claude-code.md"
    text = page.read_text()
    (line,) = _claude_mcp_add_lines(text)
    added = claude_mcp_add(_words(line))
    (config,) = [
        json.loads(block)
        for block in re.findall(r"(?ms)^```json\n(.*?)^```", text)
        if "mcpServers" in block
    ]
    server = config["mcpServers"][added.name]
    assert added.name == "boris" and added.transport == "stdio"
    assert added.env == server["env"] and set(added.env) == {"BORIS_STORE", "BORIS_KEY"}
    assert [added.command, *added.args] == [server["command"], *server["args"]]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_claude_mcp_add_line_a_page_shows_parses(page: Path) -> None:
    for line in _claude_mcp_add_lines(page.read_text()):
        claude_mcp_add(_words(line))
