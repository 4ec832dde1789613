"""Agents Reviewer does not run itself: hooks, proxies and framework adapters, over one adapter core.

Each integration differs only in how it reads a call from its host and writes the decision back; asking,
waiting, rules and the record are :mod:`reviewer_app.integrations.core`'s. No Qt here; frameworks are
imported lazily inside their own module.
"""
