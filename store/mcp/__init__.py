"""`boris mcp`: the record's commands as Model Context Protocol tools for agents.

`tools` is the protocol-free part (which commands are tools, their JSON Schemas from the
command models, running one through the command layer, waiting for a person's decision);
`server` wires it to the official `mcp` SDK over stdio or streamable HTTP on loopback;
`tasks` runs the calls that wait on a person as MCP tasks and tells an eliciting client's user
where a person decides; `board` keeps those tasks in the store (a restarted server answers for
them); `mrtr` tells the user at 2026-07-28, as a multi round-trip request.
"""
