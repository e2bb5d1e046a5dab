"""The operator's page of the HTTP gateway (``GET /``, and its JSON twin ``/operator.json``):
each server's state, process, counters, latency and last error, and the recent audit records.

- `snapshot`: what the page shows, gathered off the loop into immutable values, secrets withheld;
- `page`: those values as escaped, server-rendered HTML;
- `route`: who may see it (the policy's ``admin`` action), and the Starlette endpoints.
"""

__all__: list[str] = []
