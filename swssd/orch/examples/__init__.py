"""Two working example plugins: a PORT_TABLE mirror into STATE_DB, and a ROUTE_TABLE consumer whose
routes wait (Retry) until their ports are up in STATE_DB."""
