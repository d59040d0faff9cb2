"""The knowledge owner's pages: a section's text with its tables shown as tables."""
from django import template

from ..rendering import text_html

register = template.Library()


@register.filter
def section_html(text: str):
    return text_html(text)
