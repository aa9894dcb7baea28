"""Adapters: an agent framework's own approval moment turned into Boris's.

Each adapter records the effect's intent before anything runs, asks for an approval bound to
the digest of exactly what will run, answers the framework with the person's decision (from
Boris Desktop or the `boris` CLI), and records the attempt and its response after; an
unknown outcome stays unknown. `claude_code`: Claude Code's permission-prompt tool (served by
`boris mcp`) and its PreToolUse / PostToolUse hooks (`boris hook`). `claude_code_permission`:
Claude Code's interactive sessions, its PermissionRequest hook and PreToolUse
`permissionDecision` answered from Boris (`boris hook permission-request`, `pre-tool-use
--decide`), and Codex CLI's PermissionRequest hook (`--for codex`). `claude_code_rules`:
Claude Code's own "always" answers (its permission suggestions) as the Boris standing rules
a person may grant instead. `langgraph`: LangChain's
`HumanInTheLoopMiddleware` interrupt on a LangGraph agent, sync or on an async checkpointer
(extra `langgraph`). `claude_agent_sdk`: the Claude Agent SDK's `can_use_tool` callback, the
permission prompt's behaviour shared with `claude_code` (extra `claude-agent-sdk`).
`openai_agents`: the OpenAI Agents SDK's `needs_approval` tools, run, streamed or handed over
by an application that runs them itself (extra `openai-agents`).
"""
