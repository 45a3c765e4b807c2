"""The bodies a monitor and a channel are written in, shaped as Firecrawl's
/v2/monitor (and Pagewatch's /v2/channels) take them. The REST API reads its
requests with them; the importer judges every watch it brings in with them and
the exporter writes monitors out in them, so an import can never create what
the API would refuse. The rules beyond a field's shape are the domain's
(monitors.rules, monitors.rules_monitor, each kind's own check), called here as
the dashboard's forms call them."""
