"""Just enough of an SMTP server on 127.0.0.1 for Django's SMTP backend,
to drive real mail conversations: it notes whom each message it takes was
for, and can take a message and then never answer."""

from __future__ import annotations

import socketserver
import threading


class MailServer(socketserver.ThreadingTCPServer):
    """Just enough SMTP on 127.0.0.1 for Django's SMTP backend: it notes the
    recipients of every message it takes and, after `answers` messages, takes
    the next one and never answers, as a server does when the sender dies
    before its answer arrives."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _MailConversation)
        self.taken: list[str] = []
        self.answers: int | None = None
        self.silent = threading.Event()
        # Cleared, each message's answer waits until it is set again (a slow
        # server: what the sender does meanwhile can be arranged).
        self.answering = threading.Event()
        self.answering.set()
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _MailConversation(socketserver.StreamRequestHandler):
    server: MailServer

    def say(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def handle(self) -> None:
        self.say("220 stand-in ESMTP")
        recipients: list[str] = []
        while line := self.rfile.readline():
            verb = line[:4].decode().upper()
            if verb == "DATA":
                self.say("354 go on")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                with self.server.lock:
                    self.server.taken.extend(recipients)
                    answers = self.server.answers
                    silent = answers is not None and len(self.server.taken) > answers
                if silent:
                    self.server.silent.set()
                    self.rfile.readline()  # until the sender is gone
                    return
                self.server.answering.wait(10)
                self.say("250 taken")
            elif verb == "RCPT":
                recipients.append(line.decode().split(":", 1)[1].strip().strip("<>"))
                self.say("250 ok")
            elif verb == "MAIL":
                recipients = []
                self.say("250 ok")
            elif verb == "QUIT":
                self.say("221 bye")
                return
            else:  # EHLO, HELO, RSET, NOOP
                self.say("250 stand-in")
