class Fore:
    RED = "\033[31m"
    GREEN = "\033[32m"
    RESET = "\033[39m"


class Style:
    BRIGHT = "\033[1m"
    RESET_ALL = "\033[0m"
