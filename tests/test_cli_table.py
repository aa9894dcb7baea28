"""Every row of the command table in docs/cli.md runs (issue 32; the table moved in issue 39).

The table's rows are synopses (`TASK`, `[--json]`, `a|b`), so `TABLE` gives each one the
concrete commands that run for it, in table order, from a fresh store in a temporary
directory, whose options are the row's own; a row added to the table without one fails here,
as does a stale entry. The table runs in `PARTS`, each from a fresh store of its own after the
rows it stands on, each in a test file of its own (test_cli_table_*.py), so that the parts run
side by side. The page's shell blocks themselves run through Sybil (conftest.py).

Also: `boris init` and `boris demo` run bare act as the person logged in, and a reader
that stops reading (`boris … | head`) ends `boris` quietly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.early

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = ROOT / "docs" / "cli.md"
BIN = Path(sys.executable).parent

#: Who runs a table row: the command line page says every write names its actor (--actor or
#: BORIS_ACTOR). LOGIN: nobody named (init and demo act as the login); PERSON: the person
#: who ran `boris init` (the store's root); AGENT: the demo's agent, with the key the demo
#: made and trusted for it.
LOGIN, PERSON, AGENT = "login", "person", "agent"
#: Table commands whose exit is not 0 by design, and why.
EXIT = {
    "boris verify": (3, "the demo's guide lost its build log on purpose: verify names it"),
}
#: A step a row needs first (run as PERSON), not itself the row's command.
PREP = "prep"

#: Each table synopsis (as it starts: options added at its end keep it) with the commands
#: that run for it, in table order ({task}: the task create-task made).
TABLE: list[tuple[str, list[tuple[str, str]]]] = [
    ("boris init", [(LOGIN, "boris init")]),
    ("boris demo", [(LOGIN, "boris demo")]),
    ("boris tasks [--json]", [(LOGIN, "boris tasks"), (LOGIN, "boris tasks --json")]),
    (
        "boris decisions [--mine] [--kind KIND]... [--task TASK]... [--json]",
        [
            (LOGIN, "boris decisions"),
            (PERSON, "boris decisions --mine --kind approval --task note --json"),
        ],
    ),
    ("boris show TASK [--json]", [(LOGIN, "boris show note"), (LOGIN, "boris show note --json")]),
    ("boris events TASK [--json]", [(LOGIN, "boris events note --json")]),
    ("boris schema", [(LOGIN, "boris schema")]),
    ("boris ingest FILE\\|-", [(AGENT, "boris ingest commands.jsonl")]),
    (
        "boris create-task --title --owner --objective --scope PATH [--destination URI]",
        [
            (
                AGENT,
                "boris create-task --title 'Weekly note' --owner me --objective 'Write it' "
                "--scope ws --destination mailto:team@example.org",
            )
        ],
    ),
    (
        "boris amend TASK --text --reason [--based-on REV]",
        [(PERSON, "boris amend {task} --text 'Write it by Friday' --reason due --based-on 1")],
    ),
    (
        "boris add-criterion TASK --text [--id]",
        [(AGENT, "boris add-criterion {task} --text 'Has a title' --id title")],
    ),
    (
        "boris change-criterion TASK CRIT --text --reason [--based-on REV]",
        [
            (
                PERSON,
                "boris change-criterion {task} title --text 'Has a dated title' "
                "--reason clearer --based-on 1",
            )
        ],
    ),
    (
        "boris record-artifact TASK NAME --file PATH \\| --text T [--based-on VERSION]",
        [
            (AGENT, "boris record-artifact {task} note --file ws/note.md"),
            (AGENT, "boris record-artifact {task} note --text '# Week 49' --based-on 1"),
        ],
    ),
    (
        "boris attach-evidence TASK CRIT --kind K --file PATH \\| --text T "
        "[--artifact A --version V]",
        [
            (
                AGENT,
                "boris attach-evidence {task} title --kind review --text 'title checked' "
                "--artifact note --version 2 >title.ev",
            )
        ],
    ),
    (
        "boris judge TASK CRIT satisfied --artifact A --evidence E [--older-evidence-reason WHY]",
        [
            (
                AGENT,
                'boris judge {task} title satisfied --artifact note --evidence "$(cat title.ev)"',
            )
        ],
    ),
    (
        "boris set-budget TASK COUNTER LIMIT [--based-on N]",
        [(PERSON, "boris set-budget {task} tool_calls 100 --based-on 0")],
    ),
    ("boris charge TASK COUNTER AMOUNT", [(AGENT, "boris charge {task} tool_calls 3")]),
    (
        "boris set-status TASK STATUS",
        [(AGENT, "boris set-status {task} paused"), (AGENT, "boris set-status {task} running")],
    ),
    (
        "boris plan-effect TASK --target PATH\\|URL --consequence TEXT "
        "[--kind file_write\\|upload\\|send\\|other] [--text T \\| --file F \\| "
        "--intended-digest D] [--requires-approval --policy P] [--id] [--idempotency-key]",
        [
            (
                AGENT,
                "boris plan-effect {task} --target ws/out.md --consequence 'write out.md' "
                "--kind file_write --text draft --requires-approval --policy review "
                "--id save --idempotency-key save-1",
            ),
            (
                AGENT,
                "boris plan-effect {task} --target ws/other.md --consequence 'not needed' "
                "--text x --id spare",
            ),
            (
                AGENT,
                "boris plan-effect {task} --target mailto:team@example.org --kind send "
                "--consequence 'mail the team' --text 'Hello' --requires-approval "
                "--policy review --id mail",
            ),
            (
                AGENT,
                "boris plan-effect {task} --target mailto:team@example.org --kind send "
                "--consequence 'mail the team again' --text 'Hello again' --requires-approval "
                "--policy review --id mail2",
            ),
        ],
    ),
    (
        "boris revise-effect TASK EFFECT --reason R [--text\\|--file\\|--intended-digest] "
        "[--consequence]",
        [(AGENT, "boris revise-effect {task} save --reason typo --text 'final text'")],
    ),
    (
        "boris cancel-effect TASK EFFECT --reason R",
        [(AGENT, "boris cancel-effect {task} spare --reason 'not needed'")],
    ),
    (
        "boris request-approval TASK (--effect ID \\| --payload-json JSON --consequence C) "
        "--policy P [--expires-in SECONDS]",
        [
            (
                AGENT,
                "boris request-approval {task} --effect save --policy review "
                "--expires-in 3600 >save.apr",
            ),
            (AGENT, "boris request-approval {task} --effect mail --policy review >mail.apr"),
            (AGENT, "boris request-approval {task} --effect mail2 --policy review >mail2.apr"),
            (
                AGENT,
                'boris request-approval {task} --payload-json \'{{"post": "hi"}}\' '
                "--consequence 'post hi' --policy review >post.apr",
            ),
        ],
    ),
    (
        "boris policy set POLICY --approvers N",
        [(PERSON, "boris policy set two-people --approvers 2")],
    ),
    ("boris policy list", [(LOGIN, "boris policy list")]),
    (
        "boris approve TASK APPROVAL [--note]",
        [(PERSON, 'boris approve {task} "$(cat save.apr)" --note "looks right"')],
    ),
    ("boris reject TASK APPROVAL [--note]", [(PERSON, 'boris reject {task} "$(cat post.apr)"')]),
    (
        "boris send-back TASK APPROVAL --note WHAT",
        [
            (PERSON, 'boris send-back {task} "$(cat mail.apr)" --note "say which week"'),
        ],
    ),
    (
        "boris approve TASK APPROVAL --edited-json JSON \\| --text T \\| --file F",
        [(PERSON, 'boris approve {task} "$(cat mail2.apr)" --text "Week 49, as agreed"')],
    ),
    (
        "boris dispatch TASK EFFECT --executor NAME [--approval ID] [--inputs-json JSON]",
        [
            (AGENT, 'boris dispatch {task} save --executor fs --approval "$(cat save.apr)"'),
            (PREP, "printf 'final text' > ws/out.md"),  # the executor writes the file
        ],
    ),
    (
        "boris record-response TASK EFFECT reported_success\\|failed\\|partial\\|timeout "
        "[--attempt N] [--response-json JSON] [--error TEXT]",
        [
            (
                AGENT,
                "boris record-response {task} save reported_success --attempt 1 "
                "--response-json '{{\"bytes\": 10}}'",
            )
        ],
    ),
    (
        "boris observe TASK EFFECT [--state-json JSON]",
        [(AGENT, "boris observe {task} save >save.obs")],
    ),
    (
        "boris reconcile TASK EFFECT [--observation ID] [--decision present\\|absent\\|conflict "
        "--note N] [--based-on SEQ]",
        [(AGENT, 'boris reconcile {task} save --observation "$(cat save.obs)" --based-on 0')],
    ),
    (
        "boris checkpoint TASK initial\\|milestone\\|handoff\\|final [--note] [--supersedes ID]... "
        "[--merge ID]...",
        [(PERSON, "boris checkpoint {task} handoff --note 'the mail is next'")],
    ),
    (
        "boris record-manifest TASK FILE\\|-",
        [
            (PREP, "boris checkpoint {task} milestone --note 'a new model' --id cfg"),
            (
                PREP,
                'echo \'{{"manifest_id": "m1", "provider": "openai", "model": "gpt-a", '
                '"included": [{{"kind": "message", "ref": "msg-1", '
                '"digest": "sha256:0123456789abcdef", "size": 12}}]}}\' > manifest.json',
            ),
            (AGENT, "boris record-manifest {task} manifest.json"),
        ],
    ),
    (
        "boris link-manifest TASK MANIFEST --effect E",
        [(AGENT, "boris link-manifest {task} m1 --checkpoint cfg")],
    ),
    ("boris manifests TASK", [(LOGIN, "boris manifests {task} --checkpoint cfg --json")]),
    (
        "boris record-configuration TASK CHECKPOINT --provider P --model M",
        [
            (
                AGENT,
                "boris record-configuration {task} cfg --provider openai --model gpt-b "
                "--tool write_file=sha256:0123456789abcdef",
            ),
        ],
    ),
    ("boris configuration TASK", [(LOGIN, "boris configuration {task} --json")]),
    (
        "boris migrate-effect-tool TASK EFFECT --reason R",
        [
            (
                PREP,
                "boris plan-effect {task} --target ws/pinned.md --consequence 'write pinned.md' "
                "--text x --tool write_file --tool-digest sha256:fedcba9876543210 --id pinned",
            ),
            (PERSON, "boris migrate-effect-tool {task} pinned --reason 'the same write'"),
        ],
    ),
    (
        "boris close TASK --as failed\\|superseded --reason R",
        [
            # The store refuses to close a run that may still dispatch: stopped first.
            (PREP, "boris stop guide --reason 'replaced by the new guide'"),
            (PERSON, "boris close guide --as superseded --reason 'replaced by the new guide'"),
        ],
    ),
    (
        "boris stop TASK --reason R [--continue-from HEAD] [--merge HEAD]...",
        [(PERSON, "boris stop note --reason 'wrong week'")],
    ),
    (
        "boris resume TASK [--json]",
        [(LOGIN, "boris resume {task}"), (LOGIN, "boris resume {task} --json")],
    ),
    ("boris summary TASK [--record]", [(AGENT, "boris summary {task} --record")]),
    (
        "boris narrative TASK [--text T --claim CRIT=STATUS]...",
        [
            (AGENT, "boris narrative {task} --text 'titled and saved' --claim title=satisfied"),
            (LOGIN, "boris narrative {task}"),
        ],
    ),
    ("boris verify [TASK]", [(LOGIN, "boris verify"), (LOGIN, "boris verify {task}")]),
    (
        "boris export TASK OUT [--force]",
        [
            (LOGIN, "boris export {task} task.tar.gz"),
            (LOGIN, "boris export {task} task.tar.gz --force"),
            (LOGIN, "boris export {task} task-all.tar.gz --include private"),
        ],
    ),
    ("boris import PKG", [(PERSON, "boris import task.tar.gz")]),
    ("boris effects TASK", [(LOGIN, "boris effects {task} --json")]),
    ("boris approvals [TASK]", [(LOGIN, "boris approvals"), (LOGIN, "boris approvals {task}")]),
    ("boris checkpoints TASK", [(LOGIN, "boris checkpoints {task} --json")]),
    (
        "boris retain TASK ITEM --class CLASS [--reason R]",
        [(PERSON, "boris retain {task} note@1 --class 0h --reason 'an old draft'")],
    ),
    ("boris retention TASK [--json]", [(LOGIN, "boris retention {task} --json")]),
    (
        "boris expire [--task T] [--dry-run]",
        [(LOGIN, "boris expire --dry-run"), (PERSON, "boris expire --task {task}")],
    ),
    (
        "boris note TASK TEXT [--kind note\\|message] [--private]",
        [(PERSON, "boris note {task} 'for the reviewers only' --kind message --private")],
    ),
    (
        "boris delete-task TASK --confirm TASK --reason R [--dry-run]",
        [
            (PREP, "boris create-task --id gone --title Gone --owner newcomer --objective x"),
            (PERSON, "boris delete-task gone --confirm gone --reason 'made by mistake' --dry-run"),
            (PERSON, "boris delete-task gone --confirm gone --reason 'made by mistake'"),
        ],
    ),
    # Late changes (issue 35 part L): a task completed, then a newer version of its artifact.
    (
        "boris late TASK [--json]",
        [
            (PREP, "boris create-task --id late-done --title Done --owner newcomer --objective x"),
            (PREP, "boris record-artifact late-done a.txt --text one"),
            (PREP, "boris checkpoint late-done final --note done"),
            (PREP, "boris record-artifact late-done a.txt --text two"),
            (LOGIN, "boris late late-done --json"),
        ],
    ),
    (
        "boris acknowledge TASK --through SEQ [--note N]",
        [(PERSON, "boris acknowledge late-done --through 6 --note 'seen: no new task'")],
    ),
    (
        "boris follow-up TASK --title T --through SEQ [--objective O] [--id ID] [--note N]",
        [
            (PREP, "boris record-artifact late-done a.txt --text three"),
            (
                PERSON,
                "boris follow-up late-done --title Again --through 8 --objective y "
                "--id late-again --note 'the source changed'",
            ),
        ],
    ),
    (
        "boris receipts [TASK] [--orphans] [--json]",
        [
            (LOGIN, "boris receipts --json"),
            (LOGIN, "boris receipts gone"),
            (LOGIN, "boris receipts --orphans"),
        ],
    ),
    (
        "boris mcp --actor agent:ID [--http [--host H] [--port P]] [--max-wait S]",
        # Serves until its client leaves: stdin at its end is a client that left at once.
        [(LOGIN, "boris mcp --actor agent:drafter-7 --max-wait 5 </dev/null")],
    ),
]


def _table() -> list[str]:
    """The synopses in the first column of the command table of docs/cli.md, in order."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    start = text.index("| command | what it does |")
    synopses: list[str] = []
    for row in text[start:].splitlines()[2:]:
        if not row.startswith("|"):
            break
        cell = re.match(r"\| ((?:[^|\\]|\\.)*) \|", row)
        assert cell is not None, row
        if cell.group(1).startswith("`boris "):  # not a row about an option
            synopses += re.findall(r"`(boris [^`]*)`", cell.group(1))
    return synopses


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_") and k != "PYTHONPATH"}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        BORIS_STORE=str(home / "store"),
        LOGNAME="newcomer",
        USER="newcomer",
    )
    return env


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + line],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))


def test_every_table_row_has_commands_with_its_own_options() -> None:
    shown = _table()
    # A row added, gone or changed (other than by options added at its end): update TABLE.
    assert len(shown) == len(TABLE), [
        s for s in shown if not any(s.startswith(k) for k, _ in TABLE)
    ]
    for synopsis, (key, runs) in zip(shown, TABLE, strict=True):
        assert synopsis.startswith(key), (synopsis, key)
        name = synopsis.split()[1]
        for who, line in runs:
            if who == PREP:
                continue
            words = line.split()
            assert words[:2] == ["boris", name], (synopsis, line)
            extra = _options(line) - _options(synopsis) - {"--json"}
            assert not extra, f"{line}: {extra} is not in the table's {synopsis!r}"


def _row(synopsis: str) -> int:
    """The index in TABLE of the row of this command (its synopsis's first words)."""
    found = [i for i, (key, _) in enumerate(TABLE) if f"{key} ".startswith(f"{synopsis} ")]
    assert len(found) == 1, (synopsis, found)
    return found[0]


def _rows(first: str, last: str) -> list[int]:
    return list(range(_row(first), _row(last) + 1))


#: What every part stands on: the store, the demo's tasks and keys, and the task.
STORE = [_row("boris init"), _row("boris demo")]
TASK = [*STORE, _row("boris create-task")]

#: The table in parts, each run in table order from a fresh store: the rows it stands on (run
#: and checked as in the whole table), then its own. Together they run every row.
PARTS: dict[str, tuple[list[int], list[int]]] = {
    "store-and-task": ([], _rows("boris init", "boris set-status")),
    "effects-and-approvals": (TASK, _rows("boris plan-effect", "boris checkpoint")),
    "manifests-close-and-stop": (TASK, _rows("boris record-manifest", "boris stop")),
    # A criterion and an artifact's first version: the narrative claims the one, retain keeps
    # the other for 0h.
    "reads-and-archive": (
        [*TASK, _row("boris add-criterion"), _row("boris record-artifact")],
        _rows("boris resume", "boris note"),
    ),
    "deletion-and-late": (STORE, _rows("boris delete-task", "boris mcp")),
}


def test_the_parts_run_every_row_once_as_their_own() -> None:
    own = [i for _, rows in PARTS.values() for i in rows]
    assert own == list(range(len(TABLE)))
    for stands_on, rows in PARTS.values():
        assert stands_on == sorted(stands_on) and all(i < rows[0] for i in stands_on)
    # Each part runs in one test file of its own (this one and test_cli_table_*.py), so
    # that the parts run on both workers.
    run = [
        m
        for path in sorted(Path(__file__).parent.glob("test_cli_table*.py"))
        for m in re.findall(r'run_part\(tmp_path, "([\w-]+)"\)', path.read_text())
    ]
    assert sorted(run) == sorted(PARTS)


def run_part(tmp_path: Path, part: str) -> None:
    """One of PARTS in table order, from a fresh store in `tmp_path`."""
    env = _env(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "note.md").write_text("# Week\n")
    (tmp_path / "commands.jsonl").write_text(
        '{"type": "add_criterion", "task_id": "note", "text": "Says which week"}\n'
    )
    keys = tmp_path / "store" / "demo-workspace" / "keys"
    who = {
        LOGIN: {},
        PERSON: {"BORIS_ACTOR": "person:newcomer"},
        PREP: {"BORIS_ACTOR": "person:newcomer"},
        AGENT: {"BORIS_ACTOR": "agent:drafter-7", "BORIS_KEY": str(keys / "agent-drafter-7.pem")},
    }
    ids: dict[str, str] = {}
    stands_on, rows = PARTS[part]
    for synopsis, runs in (TABLE[i] for i in [*stands_on, *rows]):
        for actor, line in runs:
            command = line.format(**ids)
            done = _run(command, tmp_path, {**env, **who[actor]})
            assert done.returncode == EXIT.get(command, (0, ""))[0], (
                f"{synopsis}\n  ran: {command}\n  exit {done.returncode}\n{done.stderr}"
            )
            if synopsis.startswith("boris create-task"):
                ids["task"] = done.stdout.strip()


def test_the_store_and_a_task_run_in_order_from_a_fresh_store(tmp_path: Path) -> None:
    run_part(tmp_path, "store-and-task")


def test_init_and_demo_run_bare_act_as_the_person_logged_in(tmp_path: Path) -> None:
    env = _env(tmp_path)
    init = _run("boris init", tmp_path, env)
    assert init.returncode == 0, init.stderr
    assert "signatures required" in init.stdout
    demo = _run("boris demo", tmp_path, env)
    assert demo.returncode == 0, demo.stderr
    listed = _run("boris keys list", tmp_path, env).stdout
    assert "person:newcomer" in listed  # the root: the login, its key in its config dir
    assert (tmp_path / ".config" / "boris" / "keys" / "person-newcomer.pem").is_file()
    # Any other write still names its actor.
    refused = _run("boris add-criterion note --text x", tmp_path, env)
    assert refused.returncode == 2 and "--actor person:newcomer" in refused.stderr


@pytest.mark.parametrize("command", ["boris schema", "boris --json tasks"])
def test_a_reader_that_stops_reading_ends_boris_quietly(tmp_path: Path, command: str) -> None:
    env = _env(tmp_path)
    assert _run("boris init", tmp_path, env).returncode == 0
    assert _run("boris demo", tmp_path, env).returncode == 0
    # The reader closes the pipe before boris writes: every write meets a broken pipe.
    done = subprocess.run(
        ["bash", "-c", f"{command} | (exec 0<&-; sleep 1); echo ${{PIPESTATUS[0]}}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""  # no traceback, no "Broken pipe" line
    assert done.stdout.strip() == "141"  # as a Unix command that SIGPIPE ended
