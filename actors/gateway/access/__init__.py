"""Who may use a shared HTTP gateway, and how: identity (`principal`, `verifiers`, `keys`,
`guard`, `challenge`), and the parts built on it (policy, audit, limits, per-user credentials).

Nothing is imported here: each part is imported from its own module, so that one part's
optional dependencies load only where it is used.
"""

__all__: list[str] = []
