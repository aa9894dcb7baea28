"""Adapters: an agent framework's own approval moment turned into Boris's.

Each adapter records the effect's intent before anything runs, asks for an approval bound to
the digest of exactly what will run, answers the framework with the person's decision (from
Boris Desktop or the `boris` CLI), and records the attempt and its response after; an
unknown outcome stays unknown. `claude_code`: Claude Code's permission-prompt tool (served by
`boris mcp`) and its PreToolUse / PostToolUse hooks (`boris hook`). `langgraph`: LangChain's
`HumanInTheLoopMiddleware` interrupt on a LangGraph agent (extra `langgraph`).
`claude_agent_sdk`: the Claude Agent SDK's `can_use_tool` callback, the permission prompt's
behaviour shared with `claude_code` (extra `claude-agent-sdk`).
"""
