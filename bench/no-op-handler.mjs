// The tracing bench's handler: does nothing, so what is measured is the worker around it.
import { defineHandler } from 'feedback-receiver';

export default defineHandler({ name: 'no-op', handle: async () => undefined });
