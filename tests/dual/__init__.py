"""The dual store: both layers together, in one process and across processes."""
