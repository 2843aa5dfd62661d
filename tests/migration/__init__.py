"""The migrate package and the importers, end to end (a package, so its names never clash with the
top-level `migrate` package)."""
