/**
 * A self-signed certificate for 127.0.0.1 (P-256, valid until 2126), made once with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 36500 -nodes -subj /CN=podctl-test -addext
 * subjectAltName=IP:127.0.0.1`:
 * an https server on loopback for the tests, trusted only by a client that is given this certificate.
 */
export const LOOPBACK_CERT = `-----BEGIN CERTIFICATE-----
MIIBlDCCATqgAwIBAgIUYif53MSzc3uUFOcJT6YB/7PZz9wwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLcG9kY3RsLXRlc3QwIBcNMjYxMTI3MjI0NDA3WhgPMjEyNjEx
MDMyMjQ0MDdaMBYxFDASBgNVBAMMC3BvZGN0bC10ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEG3vR6xY4nb25LNia4GHBOYy9ct0SxhvdVjib/TtA9bx1EZg+
zlCa/xE8ltbOUQ4EaBeEmCea9vO9mAJHlpQylKNkMGIwHQYDVR0OBBYEFCnX7Xjr
Xc7KonFGuGshmPSstDlzMB8GA1UdIwQYMBaAFCnX7XjrXc7KonFGuGshmPSstDlz
MA8GA1UdEwEB/wQFMAMBAf8wDwYDVR0RBAgwBocEfwAAATAKBggqhkjOPQQDAgNI
ADBFAiEA2XoB9t6OYUt+GXMTCbL3iObIeMid0NxiS0YXmI6impUCIF9UABDiPgTM
0Z0SgrFDUEd0ri7kQ/Cr+SXqYUy+n7Jf
-----END CERTIFICATE-----
`;

export const LOOPBACK_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgq1RX3RFE6Ii5ABSx
fhItFhpd1IYZ/ddvArPaESGglqihRANCAAQbe9HrFjidvbks2JrgYcE5jL1y3RLG
G91WOJv9O0D1vHURmD7OUJr/ETyW1s5RDgRoF4SYJ5r2872YAkeWlDKU
-----END PRIVATE KEY-----
`;
