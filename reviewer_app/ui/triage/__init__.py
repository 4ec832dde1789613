"""Triage tools: the hub the window builds, undo's grace period, bulk decisions."""
