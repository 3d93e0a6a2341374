/**
 * The workload's tool input, as an application defines it: with Zod. Both sides of W3 load it, so
 * that both processes hold the application's schema library; the plain loop sends the same schema
 * as JSON (`TOOL.inputSchema`) and validates nothing, as a plain loop would.
 */
import { z } from "zod";

export const weatherInput = z.object({ city: z.string() });
