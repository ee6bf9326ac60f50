// Loads TypeScript through tsx (resolved from this checkout, not the caller's working directory)
// and hands over to the command dispatcher; bin/tintype runs it on the checkout's Node.
import { register } from 'tsx/esm/api';

register();
await import('./tintype.ts');
