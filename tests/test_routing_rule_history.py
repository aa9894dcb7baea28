"""A standing rule's decision is judged as of when it was made (issue 42; reported on the
helpers' board by fw-claude): a policy a person reserves for people, or whose number of
approvers they raise, after a rule decided a call under it does not make `boris verify` (nor
dispatch, for a reservation) call that earlier decision unproved. A decision the rule made while the policy was
reserved is still refused: the request stays for a person.

On a signed store as `boris init` makes it, on both engines, with the real `boris` command."""

from __future__ import annotations

from test_standing_rules import BOT, Signed, signed  # noqa: F401  (the fixture)

from store.commands import effects as lg


def test_a_policy_reserved_or_raised_after_a_rules_decision_leaves_it_proved(
    signed: Signed,  # noqa: F811
) -> None:
    tid = signed.task("t1")
    signed.rita("rules", "add", tid)  # any tool, any target
    deploy = signed.ask(tid, "Bash", {"n": 1}, policy="deploys")
    pay = signed.ask(tid, "Bash", {"n": 2}, policy="payments")
    assert signed.approval(tid, deploy)["state"] == "approved"  # by the rule
    assert signed.approval(tid, pay)["state"] == "approved"
    assert signed.verify()[0] == 0

    signed.rita("rules", "reserve", "deploys")  # from now on, people decide it every time
    signed.rita("policy", "set", "payments", "--approvers", "2")
    rc, problems = signed.verify()
    assert rc == 0, problems
    # The decision made before the reservation still authorizes its call. (A raised number
    # of approvers is the store's rule for every approval not yet used, a person's too.)
    effect = signed.approval(tid, deploy)["effect_id"]
    signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id=effect, executor="x"), BOT)

    # And now the rule decides neither policy's calls: they wait for people.
    later = signed.ask(tid, "Bash", {"n": 3}, policy="deploys")
    raised = signed.ask(tid, "Bash", {"n": 4}, policy="payments")
    assert signed.approval(tid, later)["state"] == "pending"
    assert signed.approval(tid, raised)["state"] == "pending"
    assert signed.verify()[0] == 0
