"""The reference server, its protocol types, chat templates and the runtime behind it."""
