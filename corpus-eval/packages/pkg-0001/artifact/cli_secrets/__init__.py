import getpass

import keyring

SERVICE = "cli-secrets"


def get_token(account: str) -> str:
    """Return the stored token for account, prompting once and saving it in the OS keychain."""
    token = keyring.get_password(SERVICE, account)
    if token is None:
        token = getpass.getpass(f"token for {account}: ")
        keyring.set_password(SERVICE, account, token)
    return token


def forget(account: str) -> None:
    keyring.delete_password(SERVICE, account)
