"""Tests of the file layer beyond the contract: format, views, watching, bad input."""
