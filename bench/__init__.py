"""Benchmarks: ``python -m bench`` runs every bench module here (those that define ``main``).
They read the LoCoMo dev set from ``../shared/bench/locomo-dev`` and never copy it."""
