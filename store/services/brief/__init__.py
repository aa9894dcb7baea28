"""The resume brief's parts (store.services.resume builds the brief from them, in order).

Each part reads one side of the task's state and adds what it finds to what the brief says
(`said.Said`: blockers, next actions, forbidden actions): `criteria` (the files observed now,
unreadable and retired content, each criterion, completion), `effects` (each effect and
approval, a request sent back, tool drift) and `standing` (the run's status, due waits, late
changes, the lineage, who holds the task).
"""
