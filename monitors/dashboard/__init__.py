"""The dashboard: HTML pages for signed-in people (HTMX), the sign-in pages
and the consent pages linked from e-mails. Routes in urls.py; views by page
family; forms in forms/."""
