// Listen addresses as the flags give them: host:port, [::]:port, or :port for every interface.

/** host and port of an address such as 0.0.0.0:9443, [::]:9443 or :9443 (every interface); `flag` names it in errors. */
export function hostPort(address: string, flag = '--address'): { host: string | undefined; port: number } {
  const at = address.lastIndexOf(':');
  const port = Number(address.slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`${flag} ${address} is not host:port`);
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? undefined : host, port };
}
