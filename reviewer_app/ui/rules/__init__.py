"""The Rules view: persistent policy rules (list, hit counts, expiry, add, edit, revoke) and the rule editor."""
