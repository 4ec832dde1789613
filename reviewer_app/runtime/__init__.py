"""The asyncio agent runtime: model clients, tools, the approval gate, runs and recovery. No Qt."""
