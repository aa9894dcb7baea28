"""Small building blocks the views share: labels and panes, words for values, icons, table models."""
