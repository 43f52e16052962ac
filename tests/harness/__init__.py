"""Shared pieces of the test suites (no tests here)."""
