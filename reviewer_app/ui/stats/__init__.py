"""The Statistics view (Ctrl+6): decisions over time, time to decision, per agent/tool/reviewer, rule hits."""
