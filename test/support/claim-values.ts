/** What settled claim values look like in Redis (claims/states.ts): for assertions on raw GETs. */
export const DONE_VALUE = /^[1-9][0-9]{1,18}1$/
export const SPOOLED_VALUE = /^[1-9][0-9]{1,18}2$/
