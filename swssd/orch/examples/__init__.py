"""Working example plugins: a PORT_TABLE mirror into STATE_DB, a ROUTE_TABLE consumer whose routes
wait (Retry) until their ports are up in STATE_DB, and routes that survive a warm restart with a
timer (warm_routes.py)."""
