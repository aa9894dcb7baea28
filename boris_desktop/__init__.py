"""Boris Desktop: the reviewer's window onto the durable record in `store`."""
