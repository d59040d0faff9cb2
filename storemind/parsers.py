"""The API's only parser: JSON whose strings PostgreSQL can store."""
from django.core.exceptions import ValidationError
from rest_framework.parsers import JSONParser

from ops.validation import find_bad_text


class StrictJSONParser(JSONParser):
    """A NUL byte or a lone surrogate (legal in JSON as \\u0000 / \\ud800) is a 400 naming
    the field, before any view code runs."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        bad = find_bad_text(data)
        if bad:
            raise ValidationError({bad[0]: [bad[1]]})
        return data
