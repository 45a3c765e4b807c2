"""The team page's forms: invite someone, change a member's role, and the
invitee's new account."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation

from monitors import rules
from monitors.models import Membership
from monitors.schedule import ScheduleError, normalize_timezone


class InviteForm(forms.Form):
    email = forms.EmailField(
        label="E-mail address",
        max_length=254,
        help_text="The invitation link is sent here; it works once, for 7 days.",
    )
    role = forms.ChoiceField(
        choices=Membership.Role.choices,
        initial=Membership.Role.EDITOR,
        help_text="Owners manage people, keys and secrets; editors change "
        "monitors; viewers only look.",
    )

    def __init__(self, *args: Any, team: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if email in self.team.member_emails():
            raise forms.ValidationError(
                "Someone with this address is in the team already."
            )
        return email


class ActivityRetentionForm(forms.Form):
    activity_retention_days = forms.IntegerField(
        label="Keep activity for (days)",
        min_value=1,
        max_value=3650,
        help_text="Older entries are deleted every hour. 1 to 3650 days.",
        # Django's own words ("Ensure this value is greater than or equal
        # to 1.") say neither the unit nor the whole range.
        error_messages={
            key: "Enter a number of days from 1 to 3650."
            for key in ("required", "invalid", "min_value", "max_value")
        },
    )


class TimeZoneField(forms.CharField):
    """A team's time zone, typed in any letter case and cleaned to its
    canonical name (empty: UTC); an unknown zone is told in plain words.
    The team page and the admin both use it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)

    def clean(self, value: Any) -> str:
        typed = super().clean(value)
        if not typed.strip() and not self.required:
            return ""  # the admin's "empty: UTC", left not chosen
        try:
            return normalize_timezone(typed)
        except ScheduleError as exc:
            raise forms.ValidationError(
                rules.TIMEZONE_UNKNOWN.plain.format(**exc.values)
            ) from None


class TimeZoneForm(forms.Form):
    time_zone = TimeZoneField(
        label="Time zone",
        help_text="Daily and weekly digests go out at their time of day in this "
        "zone, for example Europe/Berlin.",
        error_messages={"required": "Pick a time zone from the list."},
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class JoinForm(forms.Form):
    """A new account for the invitee: the e-mail address is the invitation's."""

    username = forms.CharField(
        label="User name",
        max_length=150,
        help_text="What you sign in with.",
    )
    password = forms.CharField(
        label="Password", widget=forms.PasswordInput, strip=False
    )

    def __init__(self, *args: Any, email: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.email = email
        # The rules clean() applies, said before the first try, not after it.
        self.fields["password"].help_text = " ".join(
            password_validation.password_validators_help_texts()
        )

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        user_model = get_user_model()
        # The model's own rule (letters, digits and @.+-_).
        user_model._meta.get_field("username").run_validators(username)
        if user_model.objects.filter(username__iexact=username).exists():
            raise forms.ValidationError("This user name is taken: choose another.")
        return username

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        password = cleaned.get("password")
        if password:
            user = get_user_model()(
                username=cleaned.get("username", ""), email=self.email
            )
            try:
                password_validation.validate_password(password, user)
            except forms.ValidationError as exc:
                self.add_error("password", exc)
        return cleaned

    def save(self) -> Any:
        return get_user_model().objects.create_user(
            self.cleaned_data["username"], self.email, self.cleaned_data["password"]
        )
