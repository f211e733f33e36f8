"""The serving certificate of the secure port: the one given, or one made at start-up.

kube-scheduler serves HTTPS on 10259 with ``--tls-cert-file`` and
``--tls-private-key-file`` when given and otherwise with a self-signed
certificate for ``localhost`` and ``127.0.0.1`` generated in memory at every
start (it sets no certificate directory). Probes and Prometheus scrape configs
written for it skip verification of that certificate (``scheme: HTTPS``,
``insecure_skip_verify``) or are given a real one; both work here unchanged.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from pathlib import Path

from scheduler.errors import UserError

__all__ = ["self_signed_pem", "server_context"]

#: What kube's generated certificate names (MaybeDefaultWithSelfSignedCerts of kube-scheduler).
SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)

#: kube-scheduler's generated certificate is valid for a year.
SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)


def self_signed_pem(
    host: str = SELF_SIGNED_HOST, ips: tuple[str, ...] = SELF_SIGNED_IPS
) -> tuple[bytes, bytes]:
    """A fresh self-signed serving certificate and its key, both PEM.

    ECDSA P-256: generated in milliseconds (an RSA key would add a noticeable
    pause to every start) and accepted by every TLS client a scraper uses.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(now.timestamp())}")])
    alt_names: list[x509.GeneralName] = [x509.DNSName(host)]
    alt_names.extend(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # clocks a little behind
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(cert_file: str | None = None, key_file: str | None = None) -> ssl.SSLContext:
    """The TLS context of the secure port; self-signed when no files are given.

    Errors name the flag and the file, since this runs before anything starts.
    TLS 1.2 is the floor, as kube's default ``--tls-min-version``.
    """
    if (cert_file is None) != (key_file is None):
        given, missing = (
            ("--tls-cert-file", "--tls-private-key-file")
            if cert_file is not None
            else ("--tls-private-key-file", "--tls-cert-file")
        )
        raise UserError(f"{given} needs {missing} as well")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file is not None and key_file is not None:
        for flag, file in (("--tls-cert-file", cert_file), ("--tls-private-key-file", key_file)):
            if not Path(file).is_file():
                raise UserError(f"{flag}: {file} does not exist or is not a file")
        try:
            context.load_cert_chain(cert_file, key_file)
        except (ssl.SSLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
            raise UserError(
                f"--tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                f"cannot use them as a serving certificate and its key: {reason}"
            ) from error
        return context
    cert_pem, key_pem = self_signed_pem()
    # The ssl module loads certificates from files only: a private directory,
    # removed as soon as they are read (the key never outlives this call on disk).
    try:
        with tempfile.TemporaryDirectory(prefix="pluggable-scheduler-tls-") as directory:
            cert_path = os.path.join(directory, "tls.crt")
            key_path = os.path.join(directory, "tls.key")
            for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
            context.load_cert_chain(cert_path, key_path)
    except OSError as error:
        raise UserError(
            f"cannot load the generated self-signed certificate through a temporary "
            f"directory ({tempfile.gettempdir()}): {error.strerror or error}; make it "
            "writable (TMPDIR) or pass --tls-cert-file and --tls-private-key-file"
        ) from error
    return context
