"""Redis access: connections and the wire, database_config.json, URLs, credentials, scans, the embedded server.

Layer rule: imports only swssd's base modules (errors, fields, names, schema, backoff, lua).
"""
