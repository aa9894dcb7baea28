"""Work off the GUI thread and the window's senses: the loader and its jobs, following the store, watching files, notifications, lexing."""
