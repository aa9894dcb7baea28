"""The reviewer's decisions: one dialog per kind of decision, and the Actions menu that opens them."""
