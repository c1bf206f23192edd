"""What the daemon needs to be operated: metrics and their HTTP endpoint, sd_notify, logging, files.

Layer rule: imports only the base modules; whatever it reports on is handed to it (never the daemon).
"""
