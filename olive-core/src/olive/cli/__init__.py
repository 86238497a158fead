"""The `olive` command line."""
