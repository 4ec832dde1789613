"""Plain-Python concepts of Reviewer: requests, decisions, policies, timeline folding.

Nothing here imports Qt or SQL; a test enforces it.
"""
