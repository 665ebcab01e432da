"""Contact details as customers type them into the checkout form."""

import re

COUNTRY_CODES = {"UK": "+44", "US": "+1", "FR": "+33", "DE": "+49", "IE": "+353"}
FREE_MAIL_DOMAINS = ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com")
EMAIL_PATTERN = re.compile(r"^[a-z0-9._+-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$")


def normalize_email(email):
    """Lower-case an email address and strip the spaces around it.

    Gmail ignores dots and anything after a plus in the local part, so those are removed
    for gmail.com addresses: two spellings of one mailbox become the same customer.
    """
    if email is None:
        return None
    email = email.strip().lower()
    if "@" not in email:
        raise ValueError(f"not an email address: {email!r}")
    local, domain = email.rsplit("@", 1)
    if domain == "googlemail.com":
        domain = "gmail.com"
    if domain == "gmail.com":
        local = local.split("+", 1)[0].replace(".", "")
    return f"{local}@{domain}"


def is_valid_email(email):
    """Whether the address looks deliverable (after normalizing)."""
    try:
        email = normalize_email(email)
    except ValueError:
        return False
    return email is not None and EMAIL_PATTERN.match(email) is not None


def is_business_email(email):
    """Whether the address is not at a free mail provider."""
    domain = normalize_email(email).rsplit("@", 1)[1]
    return domain not in FREE_MAIL_DOMAINS


def normalize_phone(phone, country="UK"):
    """The phone number in international form: '+44 20 7946 0958' -> '+442079460958'.

    A national number (starting with 0) takes the country's calling code.
    """
    digits = re.sub(r"[^\d+]", "", phone)
    if digits.startswith("00"):
        digits = "+" + digits[2:]
    if digits.startswith("+"):
        return digits
    if country not in COUNTRY_CODES:
        raise ValueError(f"unknown country {country!r}")
    if len(digits) < 6:
        raise ValueError(f"too short for a phone number: {phone!r}")
    return COUNTRY_CODES[country] + digits.lstrip("0")


def format_phone(phone):
    """A UK number grouped for printing: '+442079460958' -> '+44 20 7946 0958'."""
    number = normalize_phone(phone)
    if number.startswith("+44") and len(number) == 13:
        return f"{number[:3]} {number[3:5]} {number[5:9]} {number[9:]}"
    return number


def mask_email(email):
    """The address as shown in emails to support staff: 'ada@example.com' -> 'a**@example.com'."""
    local, domain = email.split("@")
    if len(local) <= 1:
        return f"*@{domain}"
    return local[0] + "*" * (len(local) - 1) + "@" + domain


def full_name(first_name, last_name, title=None):
    """'Dr Ada Lovelace', with the name parts capitalised and spaces tidied."""
    parts = [title] if title else []
    parts += [first_name.strip().title(), last_name.strip().title()]
    return " ".join(parts)


def initials(name):
    """'Ada King Lovelace' -> 'AKL'."""
    return "".join(part[0].upper() for part in name.split() if part)
