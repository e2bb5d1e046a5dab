"""The Cedar mapping of the gateway's policy, without a gateway: principals and their groups and
attributes, what servers offer and their server, the actions, argument conditions, what each
principal sees, the rules a denial names, and the checks a policy file passes when it loads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from actors.cli import main
from actors.config import ConfigError, load_config
from actors.gateway.access.gate import POLICY_REFUSED, AccessGate, refusal_error, refused_call
from actors.gateway.access.policy import Policy
from actors.gateway.access.policy_file import load_policy, policy_file
from actors.gateway.access.principal import LOCAL, AuthMode, Principal
from actors.gateway.access.use import CedarAction, Use
from actors.gateway.access.verdict import Decision

TEAM = """
@id("devs-git")
permit (principal in Group::"dev", action in Action::"use", resource in Server::"git");

@id("ops-clone")
permit (principal in Group::"ops", action == Action::"call", resource == Tool::"git/clone")
when { context.arguments.repo like "team-*" };

@id("no-force")
forbid (principal, action == Action::"call", resource in Server::"git")
when { context.arguments has force && context.arguments.force == true };

@id("no-push")
forbid (principal in Group::"ops", action, resource == Tool::"git/push");

@id("public-docs")
permit (principal, action == Action::"read", resource == Template::"docs://{page}")
when { context.uri like "docs://public/*" };

@id("admins")
permit (principal, action == Action::"admin", resource == Gateway::"gateway")
when { principal.scopes.contains("gateway:admin") };
"""

DEV = Principal("alice", AuthMode.OAUTH, issuer="https://id.example", groups=("dev",))
OPS = Principal("bob", AuthMode.OAUTH, groups=("ops",), scopes=("gateway:admin",))
NOBODY = Principal("carol", AuthMode.OAUTH, groups=("guests",))


@pytest.fixture(scope="module")
def team() -> Policy:
    return Policy.parse(TEAM, "team.cedar")


# ---- principals, servers and actions ------------------------------------------------------------


def test_a_group_rule_gives_its_members_a_whole_server(team: Policy) -> None:
    for use in (
        Use.call("git", "log"),
        Use.prompt("git", "review", {"pr": "7"}),
        Use.read("git", "git://HEAD"),
        Use.read("git", "git://tree/a", "git://tree/{path}", CedarAction.SUBSCRIBE),
        Use.prompt("git", "review").completing(),
    ):
        assert team.decide(DEV, use).allowed, use
    assert team.decide(DEV, Use.call("time", "now")).decision is Decision.HIDE
    assert team.decide(NOBODY, Use.call("git", "log")).decision is Decision.HIDE


def test_the_principal_is_its_subject_in_its_groups_with_its_claims() -> None:
    policy = Policy.parse(
        """
        @id("by-subject") permit (principal == User::"alice", action, resource == Tool::"a/one");
        @id("by-scope") permit (principal, action, resource == Tool::"a/two")
            when { principal.scopes.contains("two") };
        @id("by-issuer") permit (principal, action, resource == Tool::"a/three")
            when { principal has issuer && principal.issuer == "https://id.example" };
        @id("by-client") permit (principal, action, resource == Tool::"a/four")
            when { principal has client && principal.client == "cli" };
        @id("by-mode") permit (principal, action, resource == Tool::"a/five")
            when { principal.mode == "local" };
        @id("by-name") permit (principal, action, resource in Server::"a")
            when { resource is Tool && resource.name like "six*" };
        """
    )
    alice = Principal("alice", AuthMode.OAUTH, issuer="https://id.example", client_id="cli", scopes=("two",))
    allowed = {
        tool
        for tool in ("one", "two", "three", "four", "five", "sixth")
        if policy.decide(alice, Use.call("a", tool)).allowed
    }
    assert allowed == {"one", "two", "three", "four", "sixth"}
    assert {t for t in ("one", "five") if policy.decide(LOCAL, Use.call("a", t)).allowed} == {"five"}


def test_the_operator_page_is_the_admin_rule(team: Policy) -> None:
    assert team.decide(OPS, Use.admin()).allowed
    assert not team.decide(DEV, Use.admin()).allowed


def test_subscribing_and_completing_are_actions_of_their_own() -> None:
    policy = Policy.parse(
        """
        @id("read-only") permit (principal, action == Action::"read", resource in Server::"s");
        @id("get-only") permit (principal, action == Action::"get", resource in Server::"s");
        """
    )
    assert policy.decide(LOCAL, Use.read("s", "s://a")).allowed
    subscribed = policy.decide(LOCAL, Use.read("s", "s://a", action=CedarAction.SUBSCRIBE))
    # Readable, so visible: the refusal may say so, and that no rule permits it.
    assert subscribed.decision is Decision.REFUSE
    assert subscribed.message == "refused by policy: no rule permits subscribe"
    completed = policy.decide(LOCAL, Use.prompt("s", "p").completing())
    assert completed.decision is Decision.REFUSE


# ---- argument conditions, forbids and the rules a denial names ----------------------------------


def test_an_argument_condition_permits_some_arguments_and_names_its_rule(team: Policy) -> None:
    assert team.decide(OPS, Use.call("git", "clone", {"repo": "team-web"})).allowed
    refused = team.decide(OPS, Use.call("git", "clone", {"repo": "secret"}))
    assert refused.decision is Decision.REFUSE
    assert refused.rules == ("ops-clone",)
    assert refused.message == "refused by policy ops-clone: this request does not meet their conditions"
    # Missing, of another type: the condition does not hold either.
    assert team.decide(OPS, Use.call("git", "clone", {})).decision is Decision.REFUSE
    assert team.decide(OPS, Use.call("git", "clone", {"repo": 7})).decision is Decision.REFUSE


def test_a_tool_with_an_argument_condition_stays_visible(team: Policy) -> None:
    listed = [Use.call("git", "clone"), Use.call("git", "log"), Use.call("git", "push")]
    assert team.visible(OPS, listed) == [True, False, False]
    assert team.visible(DEV, listed) == [True, True, True]
    assert team.visible(NOBODY, listed) == [False, False, False]


def test_a_forbid_on_arguments_refuses_a_visible_tool_by_its_id(team: Policy) -> None:
    refused = team.decide(DEV, Use.call("git", "log", {"force": True}))
    assert (refused.decision, refused.rules, refused.message) == (
        Decision.REFUSE,
        ("no-force",),
        "refused by policy no-force",
    )
    assert team.decide(DEV, Use.call("git", "log", {"force": False})).allowed


def test_a_forbid_without_conditions_hides(team: Policy) -> None:
    # ops may not push at all: git/push is as unknown to them as a tool that does not exist.
    assert team.decide(OPS, Use.call("git", "push", {"repo": "team-web"})).decision is Decision.HIDE


def test_a_template_is_visible_for_the_uris_a_rule_may_allow(team: Policy) -> None:
    assert team.visible(NOBODY, [Use.listed_template("docs", "docs://{page}")]) == [True]
    assert team.decide(NOBODY, Use.read("docs", "docs://public/intro", "docs://{page}")).allowed
    refused = team.decide(NOBODY, Use.read("docs", "docs://internal/plan", "docs://{page}"))
    assert (refused.decision, refused.rules) == (Decision.REFUSE, ("public-docs",))


def test_a_rule_without_an_id_is_named_by_cedar() -> None:
    policy = Policy.parse(
        """permit (principal, action, resource in Server::"a");
        forbid (principal, action, resource) when { context.arguments has x };"""
    )
    assert policy.rules == ("policy0", "policy1")
    assert policy.decide(LOCAL, Use.call("a", "t", {"x": 1})).rules == ("policy1",)


def test_conditions_under_not_unless_and_if_are_relaxed_the_right_way() -> None:
    policy = Policy.parse(
        """
        @id("p1") permit (principal, action, resource == Tool::"a/one") unless { context.arguments.x == 1 };
        @id("p2") permit (principal, action, resource == Tool::"a/two") when { !(context.arguments.x == 1) };
        @id("p3") permit (principal, action, resource == Tool::"a/three")
            when { if context.arguments has x then false else true };
        @id("f4") forbid (principal, action, resource == Tool::"a/four") unless { context.arguments has ok };
        @id("p4") permit (principal, action, resource == Tool::"a/four");
        @id("f5") forbid (principal, action, resource == Tool::"a/five") when { principal.mode == "local" };
        @id("p5") permit (principal, action, resource == Tool::"a/five");
        """
    )
    names = ("one", "two", "three", "four", "five")
    # Each could be allowed for some arguments, but the last, forbidden without a condition.
    assert policy.visible(LOCAL, [Use.call("a", n) for n in names]) == [True, True, True, True, False]
    assert policy.decide(LOCAL, Use.call("a", "one", {"x": 1})).decision is Decision.REFUSE
    assert policy.decide(LOCAL, Use.call("a", "one", {"x": 2})).allowed
    assert policy.decide(LOCAL, Use.call("a", "two", {"x": 1})).decision is Decision.REFUSE
    assert policy.decide(LOCAL, Use.call("a", "three", {"x": 0})).decision is Decision.REFUSE
    assert policy.decide(LOCAL, Use.call("a", "three", {})).allowed
    assert policy.decide(LOCAL, Use.call("a", "four", {})).rules == ("f4",)
    assert policy.decide(LOCAL, Use.call("a", "four", {"ok": True})).allowed


# ---- arguments as Cedar reads them ---------------------------------------------------------------


def test_arguments_are_read_as_json_gives_them() -> None:
    policy = Policy.parse(
        """@id("shape") permit (principal, action, resource == Tool::"a/t") when {
            context.arguments.n == 3 && context.arguments.ratio == "0.5" && !(context.arguments has gone)
            && context.arguments.tags.contains("x") && context.arguments.deep.er.est == true
        };"""
    )
    arguments = {"n": 3.0, "ratio": 0.5, "gone": None, "tags": ["x", "y"], "deep": {"er": {"est": True}}}
    assert policy.decide(LOCAL, Use.call("a", "t", arguments)).allowed


def test_arguments_cannot_name_an_entity() -> None:
    policy = Policy.parse(
        """@id("own") permit (principal, action, resource == Tool::"a/t") when {
            context.arguments has owner && context.arguments.owner == principal
        };"""
    )
    forged = {"owner": {"__entity": {"type": "User", "id": "local"}}}
    assert policy.decide(LOCAL, Use.call("a", "t", forged)).decision is Decision.REFUSE


def test_arguments_too_deep_to_read_are_refused() -> None:
    policy = Policy.parse(
        """@id("any") permit (principal, action, resource) when { context.arguments has a };"""
    )
    deep: dict[str, object] = {"a": 1}
    for _ in range(40):
        deep = {"a": deep}
    refused = policy.decide(LOCAL, Use.call("s", "t", deep))
    assert refused.decision is Decision.REFUSE
    assert "nest too deeply" in refused.message


def test_a_policy_that_reads_no_context_decides_from_its_cache() -> None:
    policy = Policy.parse("""@id("git") permit (principal, action, resource in Server::"git");""")
    # The arguments are not read at all: no conversion, any shape passes.
    assert policy.decide(LOCAL, Use.call("git", "log", {"x": float("nan"), "deep": [[[[[]]]]]})).allowed
    assert policy.visible(LOCAL, [Use.call("git", f"t{i}") for i in range(300)]) == [True] * 300


# ---- loading: the schema, the file, the config key ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('permit (principal in Team::"x", action, resource);', "unrecognized entity type `Team`"),
        ('permit (principal, action == Action::"delete", resource);',
         'unrecognized action `Action::"delete"`'),
        ('@id("typo") permit (principal, action == Action::"call", resource) when { resource.uri == "x" };',
         "policy typo: attribute `uri` on entity type `Tool` not found"),
        ('permit (principal, action == Action::"read", resource) when { context.uri == 1 };',
         "Long and String"),
        ('permit (principal, action, resource', "not Cedar policies"),
        ('permit (principal == ?principal, action, resource);', "templates"),
        ('@id("a") permit (principal, action, resource);\n@id("a") forbid (principal, action, resource);',
         "@id 'a' names more than one policy"),
    ],
)  # fmt: skip
def test_a_policy_that_does_not_fit_the_schema_is_a_config_error(text: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Policy.parse(text, "/etc/gateway/policy.cedar")
    message = str(caught.value)
    assert "/etc/gateway/policy.cedar" in message and "access.policy" in message
    assert said in message, message


def test_the_policy_file_is_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "team.cedar").write_text(TEAM)
    config_path = tmp_path / "conf" / "gateway.json"
    config_path.write_text(json.dumps({"mcpServers": {}, "access": {"policy": "team.cedar"}}))
    config = load_config(config_path)
    assert policy_file(config) == tmp_path / "conf" / "team.cedar"
    policy = load_policy(config)
    assert policy is not None and policy.rules[0] == "devs-git"
    assert load_policy(load_config({"mcpServers": {}})) is None


def test_a_missing_policy_file_is_a_config_error(tmp_path: Path) -> None:
    config = load_config({"mcpServers": {}, "access": {"policy": str(tmp_path / "nowhere.cedar")}})
    with pytest.raises(ConfigError, match="cannot read the policy file"):
        load_policy(config)


# ---- the gate -----------------------------------------------------------------------------------


def test_without_a_policy_the_gate_lets_everything_through() -> None:
    gate = AccessGate()
    items = list(range(100))

    async def run() -> None:
        assert (await gate.admit(NOBODY, Use.call("any", "thing"))).allowed
        assert await gate.visible(NOBODY, items, lambda i: Use.call("s", str(i))) == items

    asyncio.run(run())
    assert not gate.polices


def test_the_gate_filters_lists_and_answers_denials(team: Policy) -> None:
    gate = AccessGate(team)
    tools = [("git", "clone"), ("git", "log"), ("time", "now")] * 20  # past the inline bound

    async def run() -> None:
        assert await gate.visible(OPS, tools, lambda t: Use.call(*t)) == [("git", "clone")] * 20
        hidden = await gate.admit(OPS, Use.call("git", "log"))
        assert hidden.hidden and not hidden.refused
        refused = await gate.admit(OPS, Use.call("git", "clone", {"repo": "x"}))
        assert refused.refused
        answer = refused_call(refused)
        assert answer.is_error and answer.content[0].text.startswith("refused by policy ops-clone")  # type: ignore[union-attr]
        error = refusal_error(refused)
        assert error.error.code == POLICY_REFUSED

    asyncio.run(run())


def test_a_new_policy_replaces_the_old_whole(team: Policy) -> None:
    gate = AccessGate(team)
    assert not gate.adopt(Policy.parse(TEAM, "again.cedar"))  # the same rules: nothing changes
    stricter = Policy.parse("""@id("none") forbid (principal, action, resource);""")
    assert gate.adopt(stricter)

    async def run() -> bool:
        return (await gate.admit(DEV, Use.call("git", "log"))).allowed

    assert not asyncio.run(run())
    assert gate.adopt(None) and asyncio.run(run())


def test_a_replica_following_a_resource_for_its_clients_passes() -> None:
    gate = AccessGate(Policy.parse("""@id("none") forbid (principal, action, resource);"""))
    replica = Principal("replica", AuthMode.REPLICA)

    async def run() -> tuple[bool, bool]:
        followed = await gate.admit(replica, Use.read("s", "s://a", action=CedarAction.SUBSCRIBE))
        called = await gate.admit(replica, Use.call("s", "t"))
        return followed.allowed, called.allowed

    assert asyncio.run(run()) == (True, False)


def test_the_policy_the_docs_show_loads_and_means_what_they_say() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "gateway.md").read_text()
    [text] = [block.split("```", 1)[0] for block in page.split("```cedar\n")[1:]]
    policy = Policy.parse(text, "docs/gateway.md")
    support = Principal("sam", AuthMode.OAUTH, groups=("support",))
    ops = Principal("olga", AuthMode.OAUTH, groups=("ops",), scopes=("gateway:admin",))
    dev = Principal("dan", AuthMode.OAUTH, groups=("dev",))
    assert policy.decide(support, Use.call("jira", "search")).allowed
    assert policy.decide(support, Use.call("jira", "create_issue")).decision is Decision.HIDE
    assert policy.decide(support, Use.read("jira", "jira://issue/1")).allowed
    assert policy.decide(ops, Use.call("deploy", "release", {"service": "team-web"})).allowed
    assert policy.decide(ops, Use.call("deploy", "release", {"service": "billing"})).rules == (
        "ops-deploys-team-services",
    )
    assert policy.decide(dev, Use.call("git", "git_push", {"force": True})).rules == ("no-force-push",)
    assert policy.decide(dev, Use.call("git", "git_push", {})).allowed
    assert policy.decide(ops, Use.admin()).allowed and not policy.decide(dev, Use.admin()).allowed


def test_check_reads_the_policy_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_path = tmp_path / "gateway.json"
    config_path.write_text(json.dumps({"mcpServers": {}, "access": {"policy": "team.cedar"}}))
    (tmp_path / "team.cedar").write_text(TEAM)
    assert main(["check", "--config", str(config_path)]) == 0
    assert f"access.policy: {tmp_path / 'team.cedar'}: 6 rules" in capsys.readouterr().out
    (tmp_path / "team.cedar").write_text('@id("typo") permit (principal in Grop::"dev", action, resource);')
    assert main(["check", "--config", str(config_path)]) == 2
    said = capsys.readouterr().err
    assert str(tmp_path / "team.cedar") in said and "policy typo: unrecognized entity type `Grop`" in said
