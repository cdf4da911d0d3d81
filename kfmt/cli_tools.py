"""Further subcommands (dump, diff, ...) register here."""


def register(sub) -> None:
    return None
