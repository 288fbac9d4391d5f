import pyfiglet

COLORS = {"red": 31, "green": 32, "yellow": 33, "blue": 34}

def colored_banner(text: str, color: str = "green") -> str:
    art = pyfiglet.figlet_format(text)
    return f"\033[{COLORS.get(color, 32)}m{art}\033[0m"
